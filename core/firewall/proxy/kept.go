package proxy

import (
	"net/http"
	"time"
)

// diskMeta is what a rendering kept on disk needs besides its bytes.
type diskMeta struct {
	expires  time.Time
	warnings []string
}

// kept is the rendering kept under vkey, in memory or on disk, while it
// has not expired.
func (r *renderings) kept(vkey string) (rendered, bool) {
	now := time.Now()
	if d, ok := r.mem.Get(vkey); ok {
		if d.expires.IsZero() || now.Before(d.expires) {
			return d, true
		}
		return rendered{}, false
	}
	dkey, meta := vkey, diskMeta{}
	if m, ok := r.onDisk.Load(vkey); ok {
		if meta = m.(diskMeta); !meta.expires.IsZero() && !now.Before(meta.expires) {
			r.onDisk.Delete(vkey)
			return rendered{}, false
		}
		dkey = vkey + metaSuffix
	}
	f, ok := r.cache.OpenDerived(dkey)
	if !ok {
		return rendered{}, false
	}
	_ = f.Close()
	return rendered{status: http.StatusOK, diskKey: dkey, size: f.Size, contentType: f.ContentType, expires: meta.expires, warnings: meta.warnings}, true
}

// metaSuffix ends the disk key of a rendering with a diskMeta.
const metaSuffix = "\x00meta"

// keep keeps a rendering: in memory when small, else on disk.
func (r *renderings) keep(vkey string, d rendered) {
	if d.size <= memRendered/8 {
		r.mem.Add(vkey, d, d.size+int64(8*len(d.marks)+len(vkey)))
		return
	}
	if d.expires.IsZero() && len(d.warnings) == 0 {
		r.cache.PutDerived(vkey, d.contentType, d.body)
		return
	}
	if r.cache.PutDerived(vkey+metaSuffix, d.contentType, d.body) {
		r.onDisk.Store(vkey, diskMeta{expires: d.expires, warnings: d.warnings})
	}
}
