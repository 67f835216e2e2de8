require "base64"
code = Base64.decode64("cHV0cyAx")
eval(code)
