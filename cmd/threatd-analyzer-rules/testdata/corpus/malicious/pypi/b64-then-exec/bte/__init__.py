import base64
payload = "aW1wb3J0IG9zOyBwcmludChvcy5nZXRjd2QoKSk="
code = base64.b64decode(payload)
exec(code)
