package main

// YARA through libyara (Debian's libyara-dev), in this plugin alone: the
// daemon and every other binary stay free of cgo.

/*
#cgo LDFLAGS: -lyara
#include <stdlib.h>
#include <string.h>
#include <yara.h>

extern int goScanCallback(YR_SCAN_CONTEXT*, int, void*, void*);
extern void goCompilerCallback(int, char*, int, YR_RULE*, char*, void*);

// match_info is what a matching rule gives: its name and meta, and its
// earliest string match.
typedef struct {
	const char* ident;
	const char* ns;
	const char* severity;
	const char* description;
	const char* path_include;
	const char* path_exclude;
	const char* scope;
	int metas;
	int64_t offset;
	int32_t length;
} match_info;

static void rule_info(YR_SCAN_CONTEXT* ctx, YR_RULE* rule, match_info* out) {
	YR_META* meta;
	YR_STRING* s;
	YR_MATCH* m;
	out->ident = rule->identifier;
	out->ns = rule->ns != NULL ? rule->ns->name : NULL;
	out->severity = NULL;
	out->description = NULL;
	out->path_include = NULL;
	out->path_exclude = NULL;
	out->scope = NULL;
	out->metas = 0;
	out->offset = -1;
	out->length = 0;
	yr_rule_metas_foreach(rule, meta) {
		out->metas++;
		if (meta->type != META_TYPE_STRING) continue;
		if (strcmp(meta->identifier, "severity") == 0) out->severity = meta->string;
		else if (strcmp(meta->identifier, "description") == 0) out->description = meta->string;
		else if (strcmp(meta->identifier, "path_include") == 0) out->path_include = meta->string;
		else if (strcmp(meta->identifier, "path_exclude") == 0) out->path_exclude = meta->string;
		else if (strcmp(meta->identifier, "scope") == 0) out->scope = meta->string;
	}
	yr_rule_strings_foreach(rule, s) {
		yr_string_matches_foreach(ctx, s, m) {
			int64_t at = m->base + m->offset;
			if (out->offset < 0 || at < out->offset) {
				out->offset = at;
				out->length = m->match_length;
			}
		}
	}
}

static int scan_mem(YR_RULES* rules, const uint8_t* buf, size_t len, int timeout, uintptr_t handle) {
	return yr_rules_scan_mem(rules, buf, len, SCAN_FLAGS_FAST_MODE, (YR_CALLBACK_FUNC)goScanCallback, (void*)handle, timeout);
}

// add_file compiles a rule file by its path, so that its includes are
// read from beside it.
static int add_file(YR_COMPILER* c, const char* path, const char* ns) {
	FILE* fh = fopen(path, "r");
	if (fh == NULL) return -1;
	int n = yr_compiler_add_file(c, fh, ns, path);
	fclose(fh);
	return n;
}

static void set_compiler_callback(YR_COMPILER* c, uintptr_t handle) {
	yr_compiler_set_callback(c, (YR_COMPILER_CALLBACK_FUNC)goCompilerCallback, (void*)handle);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"
)

// match is one rule that matched a buffer.
type match struct {
	Rule, Namespace, Severity, Description string
	// PathInclude and PathExclude are the rule's file globs (meta
	// path_include, path_exclude: GuardDog's), comma-separated.
	PathInclude, PathExclude string
	// Scope "install": the severity holds in what runs at install; in
	// other code the finding is medium.
	Scope string
	// Offset and Length are the rule's earliest string match (-1: the
	// rule matched on its condition alone).
	Offset int64
	Length int
}

var initOnce sync.Once
var initErr error

func yaraInit() error {
	initOnce.Do(func() {
		if rc := C.yr_initialize(); rc != C.ERROR_SUCCESS {
			initErr = fmt.Errorf("libyara: initialise: error %d", int(rc))
		}
	})
	return initErr
}

// ruleSource is one rule file: its text, or its path when it is a file on
// disk (its includes are then read from beside it), named for its
// messages and namespace.
type ruleSource struct{ Name, Text, Path string }

// compiled is a compiled YARA rule set, safe for concurrent scans.
type compiled struct{ rules *C.YR_RULES }

// compile compiles rule files, each in its own namespace (its name), so
// that two sets may name a rule alike. Every error of every file is
// returned, with its file and line.
func compile(sources []ruleSource) (*compiled, error) {
	if err := yaraInit(); err != nil {
		return nil, err
	}
	var c *C.YR_COMPILER
	if rc := C.yr_compiler_create(&c); rc != C.ERROR_SUCCESS {
		return nil, fmt.Errorf("libyara: compiler: error %d", int(rc))
	}
	defer C.yr_compiler_destroy(c)
	var msgs []string
	h := cgo.NewHandle(&msgs)
	defer h.Delete()
	C.set_compiler_callback(c, C.uintptr_t(h))
	for _, s := range sources {
		ns := C.CString(s.Name)
		var n C.int
		if s.Path != "" {
			p := C.CString(s.Path)
			n = C.add_file(c, p, ns)
			C.free(unsafe.Pointer(p))
			if n < 0 {
				C.free(unsafe.Pointer(ns))
				return nil, fmt.Errorf("%s: cannot be read", s.Path)
			}
		} else {
			text := C.CString(s.Text)
			n = C.yr_compiler_add_string(c, text, ns)
			C.free(unsafe.Pointer(text))
		}
		C.free(unsafe.Pointer(ns))
		if n > 0 {
			for i := range msgs {
				if !strings.Contains(msgs[i], ":") {
					msgs[i] = s.Name + ": " + msgs[i]
				}
			}
			// libyara accepts no more source after an error.
			return nil, errors.New(strings.Join(msgs, "; "))
		}
	}
	var r *C.YR_RULES
	if rc := C.yr_compiler_get_rules(c, &r); rc != C.ERROR_SUCCESS {
		return nil, fmt.Errorf("libyara: rules: error %d", int(rc))
	}
	return &compiled{rules: r}, nil
}

//export goCompilerCallback
func goCompilerCallback(level C.int, file *C.char, line C.int, _ *C.YR_RULE, message *C.char, user unsafe.Pointer) {
	if level == C.YARA_ERROR_LEVEL_WARNING {
		return // warnings (slow strings) do not stop a rule set
	}
	msgs := cgo.Handle(user).Value().(*[]string)
	where := ""
	if file != nil {
		where = C.GoString(file) + ":"
	}
	*msgs = append(*msgs, fmt.Sprintf("%sline %d: error %s", where, int(line), C.GoString(message)))
}

// errScanTimeout is a scan that ran past its timeout.
var errScanTimeout = errors.New("the YARA scan ran past its time limit")

// scan runs the rules over data, within timeout seconds.
func (c *compiled) scan(data []byte, timeoutSeconds int) ([]match, error) {
	var out []match
	h := cgo.NewHandle(&out)
	defer h.Delete()
	var p *C.uint8_t
	if len(data) > 0 {
		p = (*C.uint8_t)(unsafe.Pointer(&data[0]))
	}
	rc := C.scan_mem(c.rules, p, C.size_t(len(data)), C.int(timeoutSeconds), C.uintptr_t(h))
	switch rc {
	case C.ERROR_SUCCESS:
		return out, nil
	case C.ERROR_SCAN_TIMEOUT:
		return out, errScanTimeout
	}
	return out, fmt.Errorf("libyara: scan: error %d", int(rc))
}

//export goScanCallback
func goScanCallback(ctx *C.YR_SCAN_CONTEXT, message C.int, data unsafe.Pointer, user unsafe.Pointer) C.int {
	if message != C.CALLBACK_MSG_RULE_MATCHING {
		return C.CALLBACK_CONTINUE
	}
	out := cgo.Handle(user).Value().(*[]match)
	var info C.match_info
	C.rule_info(ctx, (*C.YR_RULE)(data), &info)
	if info.metas == 0 {
		// A rule with no meta is a building block of others (GuardDog's
		// .meta includes): not a finding.
		return C.CALLBACK_CONTINUE
	}
	m := match{Rule: C.GoString(info.ident), Offset: int64(info.offset), Length: int(info.length)}
	if info.ns != nil {
		m.Namespace = C.GoString(info.ns)
	}
	if info.severity != nil {
		m.Severity = C.GoString(info.severity)
	}
	if info.description != nil {
		m.Description = C.GoString(info.description)
	}
	if info.path_include != nil {
		m.PathInclude = C.GoString(info.path_include)
	}
	if info.path_exclude != nil {
		m.PathExclude = C.GoString(info.path_exclude)
	}
	if info.scope != nil {
		m.Scope = C.GoString(info.scope)
	}
	*out = append(*out, m)
	return C.CALLBACK_CONTINUE
}
