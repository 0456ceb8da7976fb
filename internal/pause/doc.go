// Package pause holds the two waits the engine's retry loops share: a
// duration spread by ±10% so that nodes retrying the same thing do not
// move in step, and a sleep that ends early when its context does.
package pause
