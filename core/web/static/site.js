// threatd's only script: a Copy button for a new API token. Everything
// works without it (the token is shown as selectable text).
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button.copy[data-copy]").forEach(function (btn) {
    var target = document.getElementById(btn.dataset.copy);
    if (!target || !navigator.clipboard) return;
    btn.hidden = false;
    btn.addEventListener("click", function () {
      navigator.clipboard.writeText(target.textContent.trim()).then(function () {
        btn.textContent = "Copied";
      }, function () {
        btn.textContent = "Select and copy the token by hand";
      });
    });
  });
});
