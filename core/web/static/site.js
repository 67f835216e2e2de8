// threatd's only script: Copy buttons. Everything works without it (the
// values are shown as selectable text). A new API token has its own button
// (data-copy names the element); every indicator, identifier and API URL
// (.copy-value) gets one next to it.
document.addEventListener("DOMContentLoaded", function () {
  if (!navigator.clipboard) return;
  function wire(btn, target) {
    btn.addEventListener("click", function () {
      navigator.clipboard.writeText(target.textContent.trim()).then(function () {
        btn.textContent = "Copied";
      }, function () {
        btn.textContent = "Select and copy by hand";
      });
    });
  }
  document.querySelectorAll("button.copy[data-copy]").forEach(function (btn) {
    var target = document.getElementById(btn.dataset.copy);
    if (!target) return;
    btn.hidden = false;
    wire(btn, target);
  });
  document.querySelectorAll(".copy-value").forEach(function (el) {
    var btn = document.createElement("button");
    btn.type = "button";
    btn.className = "copy";
    btn.textContent = "Copy";
    btn.setAttribute("aria-label", "Copy " + el.textContent.trim().slice(0, 80));
    el.after(btn);
    wire(btn, el);
  });
});
