//go:build !linux

package frontend

import (
	"errors"
	"log/slog"
	"time"
)

// Parking idle sessions needs epoll; elsewhere every session keeps its
// goroutine.
type parker struct{}

const parkingSupported = false

func newParker(*slog.Logger) (*parker, error) { return nil, errors.New("parking needs Linux") }

func (p *parker) park(*Session, int, time.Time) bool { return false }
func (p *parker) take(*Session) bool                 { return false }
func (p *parker) wake(*Session, wakeReason) bool     { return false }
func (p *parker) expire(time.Time)                   {}
func (p *parker) close(wakeReason)                   {}
func (s *Session) socketFD() int                     { return -1 }

func (p *parker) count() int { return 0 }
