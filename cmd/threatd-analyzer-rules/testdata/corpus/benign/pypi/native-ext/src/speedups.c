#include <Python.h>
static PyModuleDef m = {PyModuleDef_HEAD_INIT, "_speedups"};
PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&m); }
