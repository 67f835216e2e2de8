const https = require("https");
function proxyFor() { return process.env.HTTPS_PROXY || process.env.https_proxy || ""; }
exports.activate = function (context) {
  const vscode = require("vscode");
  context.subscriptions.push(vscode.commands.registerCommand("acme.send", async () => {
    const url = await vscode.window.showInputBox({ prompt: "URL" });
    if (!url) return;
    https.get(url, { headers: { "User-Agent": "acme" } }, (res) => {
      vscode.window.showInformationMessage("HTTP " + res.statusCode + (proxyFor() ? " (proxied)" : ""));
    });
  }));
};
