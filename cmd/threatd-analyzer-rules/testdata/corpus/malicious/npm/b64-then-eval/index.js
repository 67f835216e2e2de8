const s = "Y29uc29sZS5sb2coMSk=";
const code = Buffer.from(s, "base64").toString("utf8");
eval(code);
