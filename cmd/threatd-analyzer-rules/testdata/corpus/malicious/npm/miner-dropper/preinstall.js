const { exec } = require("child_process");
const os = require("os");
if (os.type() === "Linux") exec("bash preinstall.sh");
else if (os.type() === "Windows_NT") exec("preinstall.bat");
