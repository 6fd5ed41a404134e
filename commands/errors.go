package commands

import "fmt"

// The error catalogue: every error reply the sidecar sends, the PK
// commands' and the connection commands' (package protocol), is one ErrCode
// here, with its Redis prefix and its text, defined once. A reply carries
// its code (Reply.Err, or the protocol writer's count of errors), so the
// metrics count prefixes by code and never read back the bytes they wrote.
// The texts are Redis's own where Redis has one: clients and tests match
// them byte for byte.

// Prefix is an error reply's first word: what clients switch on and what
// Redis's errorstats (INFO) count.
type Prefix uint8

const (
	PrefixERR Prefix = iota
	PrefixNOAUTH
	PrefixWRONGPASS
	PrefixNOPROTO
	PrefixUNAVAILABLE
	PrefixMISMATCH
	PrefixEXECABORT
	PrefixOOM
	// NumPrefixes is how many prefixes there are (counters by Prefix).
	NumPrefixes
)

var prefixNames = [NumPrefixes]string{"ERR", "NOAUTH", "WRONGPASS", "NOPROTO", "UNAVAILABLE", "MISMATCH", "EXECABORT", "OOM"}

func (p Prefix) String() string { return prefixNames[p] }

// ErrCode is one kind of error reply. The zero code, NoError, is no error.
type ErrCode uint8

const (
	NoError ErrCode = iota

	// Any command.
	ErrSyntax
	ErrArity           // the command's name
	ErrSubcommandArity // the container's and the subcommand's names
	ErrUnknownCommand  // the name, the first arguments quoted
	ErrUnknownSubcommand
	ErrNotInteger
	ErrProtocol // what the framing or the parser refused
	ErrMaxClients

	// PK commands.
	ErrNamespace
	ErrFromNeedsIfEq
	ErrFromSameKey
	ErrMismatch
	ErrDuplicateKey
	ErrInvalidCursor
	ErrInvalidExpire // the command's name
	ErrKeyEmpty      // max-key-bytes
	ErrKeyTooLarge   // max-key-bytes
	ErrValueTooLarge // max-value-bytes
	ErrPatternTooLarge
	ErrUnavailable // the store's failure, on one line
	ErrRefused     // a store's refusal of the arguments (backend.Refusal): its line

	// Transactions.
	ErrExecAbortQueued
	ErrExecAbort // why the block did not run
	ErrNestedMulti
	ErrExecWithoutMulti
	ErrDiscardWithoutMulti
	ErrNoWatch   // WATCH or UNWATCH
	ErrQueueFull // the bounds on commands and bytes
	ErrTxMemory  // --max-tx-memory, over all connections

	// Connection commands.
	ErrNoAuth
	ErrHelloNoAuth
	ErrWrongPass
	ErrAuthNoPassword
	ErrNoProto
	ErrProtoVersion
	ErrHelloOption
	ErrDBIndex
	ErrClientName
	ErrClientAttr // the attribute's name
	ErrUnrecognizedOption
	ErrUnknownClientType
	ErrInvalidClientID
	ErrClientIDRange
	ErrNoSuchUser
	ErrNoSuchClient

	numErrCodes
)

// errSpec is a code's prefix and its whole line (without the leading '-'),
// a format for the codes that take arguments.
type errSpec struct {
	prefix Prefix
	line   string
}

var catalogue = [numErrCodes]errSpec{
	ErrSyntax:            {PrefixERR, "ERR syntax error"},
	ErrArity:             {PrefixERR, "ERR wrong number of arguments for '%s' command"},
	ErrSubcommandArity:   {PrefixERR, "ERR wrong number of arguments for '%s|%s' command"},
	ErrUnknownCommand:    {PrefixERR, "ERR unknown command '%s', with args beginning with: %s"},
	ErrUnknownSubcommand: {PrefixERR, "ERR unknown subcommand '%s'. Try %s HELP."},
	ErrNotInteger:        {PrefixERR, "ERR value is not an integer or out of range"},
	ErrProtocol:          {PrefixERR, "ERR Protocol error: %s"},
	ErrMaxClients:        {PrefixERR, "ERR max number of clients reached"},

	ErrNamespace:       {PrefixERR, "ERR invalid namespace name"},
	ErrFromNeedsIfEq:   {PrefixERR, "ERR FROM needs IFEQ oldValue"},
	ErrFromSameKey:     {PrefixERR, "ERR FROM key must differ from the new key"},
	ErrMismatch:        {PrefixMISMATCH, "MISMATCH old key has no record with that value"},
	ErrDuplicateKey:    {PrefixERR, "ERR duplicate key in 'pk.mprepare'"},
	ErrInvalidCursor:   {PrefixERR, "ERR invalid cursor"},
	ErrInvalidExpire:   {PrefixERR, "ERR invalid expire time in '%s' command"},
	ErrKeyEmpty:        {PrefixERR, "ERR key is empty (keys are 1 to max-key-bytes (%d) bytes)"},
	ErrKeyTooLarge:     {PrefixERR, "ERR key is larger than max-key-bytes (%d)"},
	ErrValueTooLarge:   {PrefixERR, "ERR value is larger than max-value-bytes (%d)"},
	ErrPatternTooLarge: {PrefixERR, "ERR pattern is larger than 4 x max-key-bytes (%d)"},
	ErrUnavailable:     {PrefixUNAVAILABLE, "UNAVAILABLE %s"},
	ErrRefused:         {PrefixERR, "ERR %s"},

	ErrExecAbortQueued:     {PrefixEXECABORT, "EXECABORT Transaction discarded because of previous errors."},
	ErrExecAbort:           {PrefixEXECABORT, "EXECABORT Transaction discarded: %s"},
	ErrNestedMulti:         {PrefixERR, "ERR MULTI calls can not be nested"},
	ErrExecWithoutMulti:    {PrefixERR, "ERR EXEC without MULTI"},
	ErrDiscardWithoutMulti: {PrefixERR, "ERR DISCARD without MULTI"},
	ErrNoWatch:             {PrefixERR, "ERR %s is not supported: use IFEQ conditions"},
	ErrQueueFull:           {PrefixERR, "ERR transaction queue is full (at most %d commands and %d bytes of arguments between MULTI and EXEC); the transaction is discarded"},
	// Redis's words for its own memory bound ("OOM command not allowed when
	// used memory > 'maxmemory'."), naming the bound that refused: a client
	// that retries OOM later retries this too.
	ErrTxMemory: {PrefixOOM, "OOM command not allowed when transactions' queued memory > 'max-tx-memory' (%d bytes); the transaction is discarded"},

	ErrNoAuth:             {PrefixNOAUTH, "NOAUTH Authentication required."},
	ErrHelloNoAuth:        {PrefixNOAUTH, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
	ErrWrongPass:          {PrefixWRONGPASS, "WRONGPASS invalid username-password pair or user is disabled."},
	ErrAuthNoPassword:     {PrefixERR, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
	ErrNoProto:            {PrefixNOPROTO, "NOPROTO unsupported protocol version"},
	ErrProtoVersion:       {PrefixERR, "ERR Protocol version is not an integer or out of range"},
	ErrHelloOption:        {PrefixERR, "ERR Syntax error in HELLO option '%s'"},
	ErrDBIndex:            {PrefixERR, "ERR DB index is out of range"},
	ErrClientName:         {PrefixERR, "ERR Client names cannot contain spaces, newlines or special characters."},
	ErrClientAttr:         {PrefixERR, "ERR %s cannot contain spaces, newlines or special characters."},
	ErrUnrecognizedOption: {PrefixERR, "ERR Unrecognized option '%s'"},
	ErrUnknownClientType:  {PrefixERR, "ERR Unknown client type '%s'"},
	ErrInvalidClientID:    {PrefixERR, "ERR Invalid client ID"},
	ErrClientIDRange:      {PrefixERR, "ERR client-id should be greater than 0"},
	ErrNoSuchUser:         {PrefixERR, "ERR No such user '%s'"},
	ErrNoSuchClient:       {PrefixERR, "ERR No such client"},
}

// Prefix is the code's first word.
func (c ErrCode) Prefix() Prefix { return catalogue[c].prefix }

// Line is the error line (without the leading '-') of a code that takes no
// arguments.
func (c ErrCode) Line() string { return catalogue[c].line }

// Linef is the error line of a code that takes arguments, formatted.
func (c ErrCode) Linef(args ...any) string { return fmt.Sprintf(catalogue[c].line, args...) }

// Reply is the error reply of a code that takes no arguments.
func (c ErrCode) Reply() Reply { return Reply{Kind: Error, Err: c, Text: catalogue[c].line} }

// Replyf is the error reply of a code that takes arguments.
func (c ErrCode) Replyf(args ...any) Reply {
	return Reply{Kind: Error, Err: c, Text: c.Linef(args...)}
}
