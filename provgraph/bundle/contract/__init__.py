"""The contract: the bundle's declared intended state (``provgraph.toml``)."""

from provgraph.bundle.contract.load import CONTRACT_FILE, Contract, contract_schema, load_contract

__all__ = ["CONTRACT_FILE", "Contract", "contract_schema", "load_contract"]
