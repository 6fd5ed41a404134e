package mongo

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/prepkey/prepkey/backend"
)

// The read bound (backend.Options.ReadBound, --max-value-bytes) on
// MongoDB. A record whose value is longer, which only another writer can
// have stored (a Wow service, anyone with access to the database), is
// refused with backend.RecordTooLarge, naming the document's size.
//
// The check is the driver's document as it arrives, not a projection the
// server evaluates ($bsonSize, $binarySize: MongoDB 4.4+): FerretDB, the
// test engine, cannot run those in a find projection, and the sidecar
// would then have two ways to read a record, one of them untested. The
// driver has read the document whole, but MongoDB bounds a document at
// 16 MiB, so one read holds at most that; what the bound saves is the
// record's decoding and copies (for layout=wow, its JSON conversion) and
// everything past the sidecar (its reply, the client).

// wowRawBound is the largest layout=wow document that may hold a value
// whose JSON is at most bound bytes: the BSON of a JSON text is at most
// about 6 times its length (an array of one-digit numbers: each element is
// a type byte, its index as a C string and an Int32, against two bytes of
// JSON), so 8 times, plus the _id (the key) and the other fields. A larger
// document is refused before its value is converted; a smaller one is
// converted and its JSON measured.
func wowRawBound(bound int, id string) int { return 8*bound + len(id) + 256 }

// refuseLarge is the refusal of the record raw at (ns, key), whose value
// is n bytes, when n is over the store's bound; else nil.
func (s *Store) refuseLarge(ns string, key []byte, raw bson.Raw, n int) error {
	if bound := s.opts.ReadBound(); n > bound {
		return backend.RecordTooLarge(ns, key, int64(len(raw)), bound)
	}
	return nil
}
