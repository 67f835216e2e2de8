#include <node.h>
void Init(v8::Local<v8::Object> exports) {}
NODE_MODULE(addon, Init)
