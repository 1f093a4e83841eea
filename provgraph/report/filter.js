// provgraph report: the violations filter and opening a linked section. Inline, no network.
// Without this script the page still reads: clauses and "show all" are <details>.
(function () {
  "use strict";
  var box = document.getElementById("filter-box");
  var input = document.getElementById("filter");
  var count = document.getElementById("filter-count");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#violations tr.v"));
  var rules = Array.prototype.slice.call(document.querySelectorAll("#violations .rule"));
  var clauses = Array.prototype.slice.call(document.querySelectorAll("#violations details.clause"));
  var pictures = Array.prototype.slice.call(document.querySelectorAll("#violations .picture"));
  // each row matches on its own text and on its rule id and clause
  var hay = rows.map(function (tr) {
    var rule = tr.closest(".rule");
    var clause = tr.closest(".clause");
    return (tr.textContent + " " + rule.getAttribute("data-rule") + " " +
            clause.getAttribute("data-clause")).toLowerCase();
  });
  var filtering = false;

  function apply() {
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (tr, i) {
      var hit = terms.every(function (t) { return hay[i].indexOf(t) >= 0; });
      tr.hidden = !hit;
      if (hit) { shown += 1; }
    });
    rules.forEach(function (rule) {
      var any = rule.querySelector("tr.v:not([hidden])") !== null;
      rule.hidden = !any;
      var more = rule.querySelector("details.more");
      if (more) {
        more.open = terms.length > 0 && more.querySelector("tr.v:not([hidden])") !== null;
      }
    });
    clauses.forEach(function (clause) {
      clause.hidden = clause.querySelector(".rule:not([hidden])") === null;
      if (terms.length) {
        clause.open = true;
      } else if (filtering) {
        clause.open = clause.getAttribute("data-open") === "1";  // back to how the page opened
      }
    });
    filtering = terms.length > 0;
    // the matches come first: a clause's picture is of its first violations, not of the matches
    pictures.forEach(function (picture) { picture.hidden = filtering; });
    count.textContent = filtering ? shown + " of " + rows.length + " listed violations match" : "";
  }

  if (box && input) {
    box.hidden = false;
    input.addEventListener("input", apply);
  }

  // a link to a focus node (or a clause) opens its collapsed section and those around it
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id ? document.getElementById(id) : null;
    for (; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") { el.open = true; }
    }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
