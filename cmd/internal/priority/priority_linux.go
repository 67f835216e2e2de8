package priority

import (
	"os"
	"strconv"
	"syscall"
)

// Lower raises the nice value of every thread of this process to nice (a
// thread already nicer is left as it is). On Linux the nice value is a
// thread's, and a thread or process starts with its creator's: the
// threads the runtime makes later, and the processes started after (a
// plugin), run at nice too, while processes started before keep theirs.
// It goes over the threads until a pass finds none to change, for the
// threads made during a pass. Nothing is changed where the kernel refuses.
func Lower(nice int) error {
	for range 10 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		changed := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			// getpriority(2) itself returns 20 - nice.
			prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
			if err != nil || 20-prio >= nice {
				continue // gone, or already nicer
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err == syscall.ESRCH {
				continue // the thread ended meanwhile
			} else if err != nil {
				return err
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return nil
}
