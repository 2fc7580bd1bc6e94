// Role: guest sample "fanout", in Go (built with Debian's golang-go for every
// architecture: samples/go.cmake): the Go runtime's threads, futexes and
// signals. Fans work out to four goroutines over channels; a goroutine that
// spins without yielding on the only P (GOMAXPROCS 1) must be preempted by the
// runtime (sysmon's SIGURG to its thread) for main to go on; eight goroutines
// count under a mutex. Every line is printed by main after what it describes
// ended: the output does not depend on the schedule or the architecture.
package main

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

func worker(jobs <-chan int, results chan<- [2]int, wg *sync.WaitGroup) {
	defer wg.Done()
	for n := range jobs {
		sum := 0
		for i := 1; i <= n*100; i++ {
			sum += i % 7
		}
		results <- [2]int{n, sum}
	}
}

func main() {
	runtime.GOMAXPROCS(1)
	jobs := make(chan int, 100)
	results := make(chan [2]int, 100)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go worker(jobs, results, &wg)
	}
	for n := 1; n <= 40; n++ {
		jobs <- n
	}
	close(jobs)
	go func() { wg.Wait(); close(results) }()
	var got []int
	total := 0
	for r := range results {
		got = append(got, r[0])
		total += r[1]
	}
	sort.Ints(got)
	fmt.Println("results:", len(got), "first:", got[0], "last:", got[len(got)-1], "total:", total)

	// A spinning goroutine on the only P: main runs again only if the
	// runtime preempts it (sysmon's SIGURG to its thread).
	var stop atomic.Bool
	var spins atomic.Int64
	done := make(chan bool)
	go func() {
		for !stop.Load() {
			spins.Add(1)
		}
		done <- true
	}()
	time.Sleep(20 * time.Millisecond)
	stop.Store(true)
	<-done
	fmt.Println("spinner preempted and stopped:", spins.Load() > 0)

	var mu sync.Mutex
	counter := 0
	var wg2 sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			for i := 0; i < 1000; i++ {
				mu.Lock()
				counter++
				mu.Unlock()
				if i%100 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	wg2.Wait()
	fmt.Println("mutex counter:", counter)
}
