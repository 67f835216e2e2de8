"use strict";
var globalThis_ = new Function("return this")();
function evaluate(source, sourceURL) {
  // Source maps name the evaluated module.
  return eval(source + "\n//# sourceURL=" + sourceURL);
}
function compileTemplate(text, imports) {
  var keys = Object.keys(imports), values = keys.map(function (k) { return imports[k]; });
  var fn = Function(keys, "return function(data){ var __p=''; " + text + " return __p; }");
  return fn.apply(undefined, values);
}
function runModule(code) { var vm = require("vm"); return vm.runInThisContext(code, { filename: "module.js" }); }
exports.evaluate = evaluate; exports.compileTemplate = compileTemplate; exports.runModule = runModule; exports.globalThis = globalThis_;
