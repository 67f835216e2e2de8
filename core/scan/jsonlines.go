package scan

import (
	"encoding/json"
	"strconv"
	"strings"
)

// listKeys are the members whose values hold the packages of the JSON
// formats: package-lock's packages and (nested) dependencies, composer's
// packages and packages-dev, CycloneDX's (nested) components, SPDX's
// packages.
var listKeys = map[string]bool{"packages": true, "packages-dev": true, "dependencies": true, "components": true}

// jsonNode is a container objectLines recorded: its ordinal and line.
type jsonNode struct {
	ord  int32
	line int32
}

type memberKey struct {
	parent int32
	member string // an object member's name, or an array element's index
}

// jsonLines gives the lines of the package entries of a JSON document, so
// that a package read with encoding/json is reported at the line where the
// file names it. It records the root, every container under a member of
// listKeys, and every container in one of those: what the parsers look up,
// and no more (its size is linear in the file's, whatever its nesting).
type jsonLines struct {
	nodes map[memberKey]jsonNode
}

// root is the document's root container.
const root int32 = 0

// find returns the recorded container member of parent.
func (l jsonLines) find(parent int32, member string) (jsonNode, bool) {
	n, ok := l.nodes[memberKey{parent, member}]
	return n, ok
}

// line is the line of member of parent, 0 when not recorded.
func (l jsonLines) line(parent int32, member string) int {
	n, ok := l.find(parent, member)
	if !ok {
		return 0
	}
	return int(n.line)
}

// objectLines walks data, which must be valid JSON (decoded before), in
// one pass over its bytes.
func objectLines(data []byte) jsonLines {
	type frame struct {
		object   bool
		ord      int32 // -1: not recorded
		listed   bool  // the value of a member of listKeys
		keyStart int   // objects: the last member name read (offsets into data)
		keyEnd   int
		escaped  bool
		index    int // arrays: the next element's index
	}
	out := jsonLines{nodes: map[memberKey]jsonNode{}}
	var stack []frame
	line, next := int32(1), int32(1)
	expectKey := false
	// open starts a container, recording it when its parent is recorded
	// and it is listed or in a listed container.
	open := func(object bool) {
		f := frame{object: object, ord: -1}
		if len(stack) == 0 {
			f.ord = root
			stack = append(stack, f)
			return
		}
		top := &stack[len(stack)-1]
		var member string
		if top.ord >= 0 {
			if top.object {
				member = string(data[top.keyStart:top.keyEnd])
				if top.escaped {
					_ = json.Unmarshal(data[top.keyStart-1:top.keyEnd+1], &member)
				}
			} else {
				member = strconv.Itoa(top.index)
			}
			f.listed = top.object && listKeys[member]
			if f.listed || top.listed {
				f.ord = next
				next++
				out.nodes[memberKey{top.ord, member}] = jsonNode{f.ord, line}
			}
		}
		if !top.object {
			top.index++
		}
		stack = append(stack, f)
	}
	scalar := func() {
		if len(stack) > 0 && !stack[len(stack)-1].object {
			stack[len(stack)-1].index++
		}
	}
	for i := 0; i < len(data); i++ {
		switch b := data[i]; b {
		case '\n':
			line++
		case '"':
			start := i + 1
			escaped := false
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					escaped = true
					i++
				}
			}
			if expectKey {
				top := &stack[len(stack)-1]
				top.keyStart, top.keyEnd, top.escaped = start, min(i, len(data)), escaped
				expectKey = false
			} else {
				scalar()
			}
		case '{':
			open(true)
			expectKey = true
		case '[':
			open(false)
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if len(stack) > 0 && stack[len(stack)-1].object {
				expectKey = true
			}
		case 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			scalar()
			for i+1 < len(data) && !strings.ContainsRune(",]} \t\r\n", rune(data[i+1])) {
				i++
			}
		}
	}
	return out
}
