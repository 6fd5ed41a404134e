package client

import (
	"context"
	"iter"
)

// Scan iterates over the records of namespace name, live and expired (while
// retained) unless ScanLive or ScanExpired says otherwise, following
// PK.SCAN's cursors until the sidecar answers cursor 0. As with Redis SCAN,
// every record present and unchanged from the start to the end is yielded at
// least once, and one may be yielded twice.
//
// An error (an invalid option, a failed page, ctx done) is yielded once,
// with a zero ScanRecord, and ends the iteration; breaking out of the loop
// sends nothing more:
//
//	for rec, err := range pk.Scan(ctx, "username", client.ScanLive()) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(rec.Key, string(rec.Value))
//	}
func (c *Client) Scan(ctx context.Context, name string, opts ...ScanOption) iter.Seq2[ScanRecord, error] {
	return func(yield func(ScanRecord, error) bool) {
		const command = "PK.SCAN"
		var s scanArgs
		for _, o := range opts {
			o(&s)
		}
		words, err := s.args(command)
		if err == nil {
			err = checkName(command, name)
		}
		if err != nil {
			yield(ScanRecord{}, err)
			return
		}
		cursor := "0"
		for {
			var page []ScanRecord
			cursor, page, err = c.scanPage(ctx, name, cursor, words)
			if err != nil {
				yield(ScanRecord{}, err)
				return
			}
			for _, rec := range page {
				if !yield(rec, nil) {
					return
				}
			}
			if cursor == "0" {
				return
			}
		}
	}
}

// scanPage sends one PK.SCAN and returns the next cursor and the page.
func (c *Client) scanPage(ctx context.Context, name, cursor string, words []any) (string, []ScanRecord, error) {
	const command = "PK.SCAN"
	reply, err := c.do(ctx, command, append([]any{name, cursor}, words...)...)
	if err != nil {
		return "", nil, err
	}
	pair, ok := reply.([]any)
	if !ok || len(pair) != 2 {
		return "", nil, unexpected(command, reply)
	}
	next, ok := pair[0].(string)
	rows, ok2 := pair[1].([]any)
	if !ok || !ok2 || next == "" {
		return "", nil, unexpected(command, reply)
	}
	page := make([]ScanRecord, 0, len(rows))
	for _, row := range rows {
		triple, ok := row.([]any)
		if !ok || len(triple) != 3 {
			return "", nil, unexpected(command, reply)
		}
		key, ok := triple[0].(string)
		if !ok {
			return "", nil, unexpected(command, reply)
		}
		rec, err := record(command, triple[1], triple[2])
		if err != nil {
			return "", nil, err
		}
		page = append(page, ScanRecord{Key: key, Record: rec})
	}
	return next, page, nil
}
