// Renders the equations of the site with the KaTeX vendored in assets/katex/ (no network at run time).
// pymdownx.arithmatex (generic mode, mkdocs.yml) leaves each formula as \( ... \) in a span.arithmatex or
// \[ ... \] in a div.arithmatex; each is rendered in place. Material's document$ emits on every page load,
// instant navigation included; without Material the page's load event does it once.
(function () {
  function render() {
    document.querySelectorAll(".arithmatex").forEach(function (element) {
      var tex = element.textContent.trim();
      var display = tex.startsWith("\\[");
      if (!(display || tex.startsWith("\\("))) return; // rendered already
      katex.render(tex.slice(2, -2), element, { displayMode: display, throwOnError: false });
    });
  }
  if (typeof document$ !== "undefined") document$.subscribe(render);
  else window.addEventListener("load", render);
})();
