const zlib = require("zlib");
eval(zlib.inflateSync(Buffer.from("eJxLy89XSEosAgAPbAN1", "base64")).toString());
