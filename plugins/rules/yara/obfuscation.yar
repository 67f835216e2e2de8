// threatd's rules: hidden code. Written for threatd from published
// techniques: payloads decoded and run at once, and the output of
// javascript-obfuscator, PyArmor-style loaders and marshal blobs.

rule threatd_decode_and_run
{
    meta:
        severity = "high"
        description = "decodes a hidden payload and runs it at once (eval/exec of base64, hex or compressed data)"
    strings:
        $js1 = /\beval\s*\(\s*(atob|unescape|decodeURIComponent)\s*\(/
        $js2 = /\b(eval|Function)\s*\(\s*Buffer\.from\s*\([^\n]{1,2000},\s*['"](base64|hex)['"]\s*\)\s*\.toString\s*\(/
        $js3 = /(new\s+)?\bFunction\s*\(\s*(atob|Buffer\.from)\s*\(/
        $js4 = /\b(eval|Function)\s*\(\s*(require\s*\(\s*['"](node:)?zlib['"]\s*\)|zlib)\.(inflate|inflateRaw|gunzip|brotliDecompress|unzip)Sync\s*\(/
        $py1 = /\bexec\s*\(\s*(base64\.(b64decode|b32decode|b16decode|a85decode|b85decode)|codecs\.decode|zlib\.decompress|bz2\.decompress|lzma\.decompress|marshal\.loads|bytes\.fromhex|binascii\.unhexlify)\s*\(/
        $py2 = /\beval\s*\(\s*compile\s*\(\s*(base64|zlib|marshal|codecs)\./
        $py3 = /exec\s*\(\s*__import__\s*\(\s*['"](base64|zlib|marshal|codecs)['"]\s*\)/
        $py4 = /\bexec\s*\(\s*['"][^'"\n]{0,20}['"]\s*\.join\s*\(\s*(map\s*\(\s*chr|\[\s*chr|\(?\s*chr\s*\()/
        $py5 = /\bexec\s*\(\s*\(?\s*_+\s*\)?\s*\(\s*b?['"]/
        $rb1 = /\beval\s*\(?\s*(Base64\.(decode64|strict_decode64|urlsafe_decode64)|Zlib::Inflate\.inflate|\[[^\]\n]{1,300}\]\.pack\s*\(\s*['"](m|H\*)['"]\s*\))/
        $rb2 = /\b(instance_eval|class_eval|module_eval)\s*\(?\s*Base64\./
        $imp = /__import__\s*\(\s*['"](zlib|base64|marshal|lzma|bz2)['"]\s*\)\s*\.\s*(decompress|b64decode|loads|b85decode|b32decode)/
        $exec = /\bexec\s*\(/
    condition:
        (any of ($js*, $py*, $rb*)) or
        (for any i in (1..#imp) : ( for any j in (1..#exec) : ( @exec[j] > @imp[i] - 300 and @exec[j] < @imp[i] + 300 ) ))
}

rule threatd_js_obfuscator
{
    meta:
        path_include = "*.js,*.cjs,*.mjs,*.ts,*.jsx,*.tsx"
        severity = "high"
        description = "javascript-obfuscator output (rotated string arrays, _0x identifiers): code hidden from review"
    strings:
        $id = /_0x[a-f0-9]{4,6}\b/
        $rot = /\[\s*['"]push['"]\s*\]\s*\(\s*_0x[a-f0-9]{4,6}\s*\[\s*['"]shift['"]\s*\]\s*\(\s*\)\s*\)/
        $pi = /parseInt\s*\(\s*_0x[a-f0-9]{4,6}\s*\(\s*0x[a-f0-9]+\s*\)\s*\)/
    condition:
        #id > 200 and ($rot or #pi > 3)
}

rule threatd_py_marshal_loader
{
    meta:
        severity = "high"
        description = "loads Python bytecode from a hidden blob and runs it (marshal/pyarmor-style loader)"
    strings:
        $m1 = /exec\s*\(\s*marshal\.loads\s*\(/
        $m2 = /__pyarmor__\s*\(/
        $m3 = /types\.FunctionType\s*\(\s*marshal\.loads\s*\(/
    condition:
        any of them
}

rule threatd_long_encoded_exec
{
    meta:
        severity = "high"
        description = "a long encoded string decoded and run as code where it stands"
    strings:
        $b64 = /['"][A-Za-z0-9+\/]{3000,}={0,2}['"]/
        $hex = /['"][0-9a-fA-F]{3000,}['"]/
        $run = /(^|[^.\w])(eval|exec)\s*\(|\bnew\s+Function\s*\(|\bvm\.runIn(This|New)?Context\s*\(/
        $dec = /Buffer\.from\s*\(|\batob\s*\(|b64decode|fromhex|unhexlify|decompress|Base64\.decode64/
    condition:
        for any i in (1..#b64) : (
            (for any j in (1..#run) : ( @run[j] > @b64[i] - 400 and @run[j] < @b64[i] + !b64[i] + 400 )) and
            (for any j in (1..#dec) : ( @dec[j] > @b64[i] - 400 and @dec[j] < @b64[i] + !b64[i] + 400 ))
        ) or
        for any i in (1..#hex) : (
            (for any j in (1..#run) : ( @run[j] > @hex[i] - 400 and @run[j] < @hex[i] + !hex[i] + 400 )) and
            (for any j in (1..#dec) : ( @dec[j] > @hex[i] - 400 and @dec[j] < @hex[i] + !hex[i] + 400 ))
        )
}

rule threatd_decrypt_and_compile
{
    meta:
        path_include = "*.js,*.cjs,*.mjs,*.ts"
        severity = "critical"
        description = "decrypts a payload and compiles it as a module (the event-stream technique)"
    strings:
        $dec = /create(Decipher|Decipheriv)\s*\(/
        $compile = /\._compile\s*\(/
        $mod = /module\.constructor/
    condition:
        for any i in (1..#dec) : (
            (for any j in (1..#compile) : ( @compile[j] > @dec[i] - 800 and @compile[j] < @dec[i] + 800 )) and
            (for any j in (1..#mod) : ( @mod[j] > @dec[i] - 800 and @mod[j] < @dec[i] + 800 ))
        )
}

rule threatd_decode_then_run
{
    meta:
        severity = "high"
        description = "decodes a hidden payload and runs it a statement later (base64 or hex decoded, then eval/exec)"
    strings:
        $py_dec = /\b(base64\.(b64decode|b32decode|b85decode|a85decode)|bytes\.fromhex|binascii\.unhexlify|codecs\.decode|zlib\.decompress|marshal\.loads)\s*\(/
        $py_run = /(^|[^.\w])(exec|eval)\s*\(/
        $js_dec = /Buffer\.from\s*\([^\n)]{1,4000},\s*['"](base64|hex)['"]\s*\)|\batob\s*\(/
        $js_run = /(^|[^.\w])eval\s*\(|\bnew\s+Function\s*\(|\bvm\.runIn(This|New)?Context\s*\(/
        $rb_dec = /Base64\.(decode64|strict_decode64|urlsafe_decode64)|Zlib::Inflate\.inflate/
        $rb_run = /(^|[^.\w])(eval|instance_eval|class_eval)\s*[\( ]/
    condition:
        (for any i in (1..#py_dec) : ( for any j in (1..#py_run) : ( @py_run[j] > @py_dec[i] and @py_run[j] - @py_dec[i] < 300 ) )) or
        (for any i in (1..#js_dec) : ( for any j in (1..#js_run) : ( @js_run[j] > @js_dec[i] and @js_run[j] - @js_dec[i] < 300 ) )) or
        (for any i in (1..#rb_dec) : ( for any j in (1..#rb_run) : ( @rb_run[j] > @rb_dec[i] and @rb_run[j] - @rb_dec[i] < 300 ) ))
}
