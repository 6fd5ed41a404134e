package protocol

import "github.com/prepkey/prepkey/protocol/transport"

// The state of a connection, and every change of it: the rest of the
// package reads it through the predicates below and changes it only through
// these methods. It lives on the connection's loop, as the conn does.
//
// A connection is in one phase at a time:
//
//	idle ──toStore──▶ atStore ──back──▶ idle
//	idle ──park────▶ parked  ──unpark─▶ idle
//	idle ──drain───▶ draining            (closed once its replies are written)
//	any  ──close───▶ closed              (the loop's last event; nothing leaves it)
//
// Three things are apart from the phase, since they hold in more than one:
// a serve scheduled after the other connections' turn (yielded), whether
// the loop reads the connection (reading), and a QUIT answered (quit): the
// serve that writes its reply has the connection closed, as Redis does. A
// QUIT is answered idle, or at the store: CLIENT KILL of itself in an EXEC
// block, which runs off the loop (transaction.go), where only quit, which
// the loop does not read meanwhile, may be written. The run's count at its
// scheduling (inRun) is the atStore phase's, and is handed back by back.
type connState struct {
	phase   phase
	inRun   int  // commands of the run at the store, counted by its loop (atStore)
	yielded bool // a serve is scheduled after other connections' turn (conn.yield)
	quit    bool // closed once the replies so far are written
	reading reading
}

// phase is where a connection's serving stands.
type phase uint8

const (
	// idle: served as its input arrives.
	idle phase = iota
	// atStore: a run of it (or work off the loop: conn.offload, EXEC's
	// block, conn.runBlock) is with the store. Its input waits in gnet's buffer, unparsed, until the
	// replies are written, so that replies keep the order of requests;
	// meanwhile out and the run belong to that work.
	atStore
	// parked: it waits, its input unread, for its loop to have room
	// (scheduler.Loop.Admit); Loop.Landed serves it again.
	parked
	// draining: it reads nothing more and is closed once its replies are
	// written (conn.closeWhenWritten).
	draining
	// closed: closed by the loop; results that come back late are dropped.
	closed
)

// reading is whether the loop reads the connection, where it can stop
// (transport/pause_linux.go; conn.flow).
type reading uint8

const (
	readAlways reading = iota // the loop cannot stop reading it (the portable transport, ...)
	readOn                    // read, and may be paused
	readPaused                // not read until its waiting input is served
)

// pausable sets where the loop can stop reading the connection (OnOpen).
func (s *connState) pausable(can bool) {
	if can {
		s.reading = readOn
	}
}

// toStore hands the connection to store work: inRun commands of its run at
// its loop (0 for work that is not a run). Only an idle
// connection is served, so only an idle one goes to the store.
func (s *connState) toStore(inRun int) {
	s.phase, s.inRun = atStore, inRun
}

// back takes the connection back from the store: idle again, unless it was
// closed meanwhile. It returns the run's count at its loop, to be landed.
func (s *connState) back() (inRun int) {
	if s.phase == atStore {
		s.phase = idle
	}
	inRun, s.inRun = s.inRun, 0
	return inRun
}

// park has the connection wait for its loop's room. It reports whether
// it was not parked already, to be queued.
func (s *connState) park() bool {
	if s.phase == parked {
		return false
	}
	s.phase = parked
	return true
}

// unpark ends the wait for its loop's room: idle again, unless it was
// closed meanwhile.
func (s *connState) unpark() {
	if s.phase == parked {
		s.phase = idle
	}
}

// quitNow has the serve close the connection once its replies are
// written (QUIT, CLIENT KILL of itself).
func (s *connState) quitNow() { s.quit = true }

// drain has the connection read nothing more and close once written.
func (s *connState) drain() { s.phase = draining }

// close is the loop's last event for the connection.
func (s *connState) close() { s.phase = closed }

// yield notes that a serve is scheduled after the others' turn; it reports
// whether none was.
func (s *connState) yield() bool {
	if s.yielded {
		return false
	}
	s.yielded = true
	return true
}

// yieldDone notes that the scheduled serve has come.
func (s *connState) yieldDone() { s.yielded = false }

// idle reports whether the connection may be served: serveAgain serves it
// only then (a serve after a QUIT answers nothing, and closes it).
func (s *connState) idle() bool { return s.phase == idle }

// answering reports whether serve goes on answering its requests.
func (s *connState) answering() bool { return s.phase == idle && !s.quit }

// atStore reports whether store work has the connection's out and run.
func (s *connState) atStore() bool { return s.phase == atStore }

// waitsOnStore reports whether its input waits for the store: a run of it
// is there, or it waits for its loop's room.
func (s *connState) waitsOnStore() bool { return s.phase == atStore || s.phase == parked }

// behind reports whether its input waits behind commands being answered: a
// run at the store, a park, a yield (Holding, flow).
func (s *connState) behind() bool { return s.waitsOnStore() || s.yielded }

// idleCloseable reports whether IdleTimeout may close it: open, and not
// waiting on the store (whose timeouts are the store's).
func (s *connState) idleCloseable() bool { return s.phase != closed && s.phase != atStore }

// stopReading has the loop read nothing more of the connection, where it
// can (a connection that drains).
func (c *conn) stopReading() {
	if c.st.reading != readAlways && transport.SetReading(c.epfd, c.gc, false) == nil {
		c.st.reading = readPaused
	}
}

// readByGnet notes that gnet reads the connection: it turns reading on when
// it drains the output.
func (c *conn) readByGnet() {
	if c.st.reading == readPaused {
		c.st.reading = readOn
	}
}

// flow stops reading the connection while it has pauseAt of input waiting
// behind commands being answered (a run at the store, a park, a yield), and
// reads it again once that input is served. So a deep pipeline waits in the
// client's socket, not in the sidecar, and the sidecar's memory is bounded
// by the runs under way, not by the pipeline.
func (c *conn) flow() {
	if c.st.reading == readAlways || c.st.phase == closed {
		return
	}
	read := !c.st.behind() || c.gc.InboundBuffered() < pauseAt
	if read == (c.st.reading == readOn) {
		return // already as wanted
	}
	if err := transport.SetReading(c.epfd, c.gc, read); err != nil {
		c.srv.cfg.Logger.Warn("cannot stop or resume reading a client; its input is bounded by closing it", "id", c.id, "err", err)
		c.st.reading = readAlways
		return
	}
	if read {
		c.st.reading = readOn
	} else {
		c.st.reading = readPaused
	}
}
