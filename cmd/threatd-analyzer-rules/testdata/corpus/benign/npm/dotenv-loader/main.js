const fs = require("fs");
const path = require("path");
function config(options = {}) {
  const p = options.path || path.resolve(process.cwd(), ".env");
  const parsed = {};
  for (const line of fs.readFileSync(p, "utf8").split(/\r?\n/)) {
    const m = line.match(/^\s*([\w.-]+)\s*=\s*(.*)?\s*$/);
    if (m && !Object.prototype.hasOwnProperty.call(process.env, m[1])) process.env[m[1]] = m[2] || "";
    if (m) parsed[m[1]] = m[2];
  }
  return { parsed };
}
module.exports = { config };
