//go:build !unix

package osv

import "os"

// mapFile reads the file at path whole where memory maps are not used.
func mapFile(path string) ([]byte, func(), error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}
