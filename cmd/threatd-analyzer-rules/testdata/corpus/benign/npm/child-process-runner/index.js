const { spawn } = require("child_process");
function run(command, args) {
  const child = spawn(command, args, { stdio: "inherit", shell: true, env: { ...process.env, FORCE_COLOR: "1" } });
  return new Promise((resolve) => child.on("exit", resolve));
}
module.exports = run;
