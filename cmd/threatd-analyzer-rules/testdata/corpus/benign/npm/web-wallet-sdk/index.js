const ADDRESS = /^0x[a-fA-F0-9]{40}$/;
const ZERO = "0x0000000000000000000000000000000000000000";
async function connect() {
  if (typeof window === "undefined" || !window.ethereum) throw new Error("no wallet");
  const [account] = await window.ethereum.request({ method: "eth_requestAccounts" });
  if (!ADDRESS.test(account) || account === ZERO) throw new Error("bad account");
  return account;
}
module.exports = { connect };
