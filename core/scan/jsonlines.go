package scan

import (
	"encoding/json"
	"strconv"
	"strings"
)

// objectLines returns the line of every JSON object in data under its
// path (the keys and array indexes from the root, joined by "\x00"), so
// that a package read with encoding/json can be given the line where the
// file names it. data must be valid JSON (decoded before): the walk only
// follows its structure, in one pass without allocating per token.
func objectLines(data []byte) map[string]int {
	type frame struct {
		object bool
		path   string // this container's path
		key    string // objects: the last key read
		index  int    // arrays: the next element's index
	}
	out := map[string]int{}
	var stack []frame
	line := 1
	expectKey := false
	// child is the path of the value that starts now.
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		top := &stack[len(stack)-1]
		var k string
		if top.object {
			k = top.key
		} else {
			k = strconv.Itoa(top.index)
			top.index++
		}
		if top.path == "" && len(stack) == 1 {
			return k
		}
		return top.path + "\x00" + k
	}
	// scalar counts a value that is not a container.
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
				raw := string(data[start:i])
				if escaped {
					var s string
					if json.Unmarshal(data[start-1:i+1], &s) == nil {
						raw = s
					}
				}
				stack[len(stack)-1].key = raw
				expectKey = false
			} else {
				scalar()
			}
		case '{':
			p := child()
			out[p] = line
			stack = append(stack, frame{object: true, path: p})
			expectKey = true
		case '[':
			stack = append(stack, frame{path: child()})
		case '}', ']':
			stack = stack[:len(stack)-1]
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

// jsonPath joins path elements as objectLines keys them.
func jsonPath(elems ...string) string { return strings.Join(elems, "\x00") }
