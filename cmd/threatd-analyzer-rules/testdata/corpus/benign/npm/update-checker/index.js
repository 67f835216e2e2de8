const { spawn } = require("child_process");
const path = require("path");
function check(options) {
  spawn(process.execPath, [path.join(__dirname, "check.js"), JSON.stringify(options)], { detached: true, stdio: "ignore" }).unref();
}
module.exports = check;
