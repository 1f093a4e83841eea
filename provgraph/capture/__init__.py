"""What a benchmark runs to produce evidence at the source: the recorder at the request boundary
and the reference DICOM renderer."""
