package sinks

// appendSubject appends the subject r's forecast is published on:
// prefix.<r.Subject>, followed for line-protocol input (r.Measurement or
// r.Field set) by .<measurement>.<field>, each made a subject token by
// appendToken.
func appendSubject(b []byte, prefix string, r *Record) []byte {
	b = append(append(append(b, prefix...), '.'), r.Subject...)
	if r.Measurement == "" && r.Field == "" {
		return b
	}
	b = appendToken(append(b, '.'), r.Measurement)
	return appendToken(append(b, '.'), r.Field)
}

// appendToken appends s as one NATS subject token: '.', '*', '>', space
// and control characters (which separate tokens, are wildcards, or are
// not allowed) become '_', as does an empty s. Other bytes, UTF-8
// included, are kept.
func appendToken(b []byte, s string) []byte {
	if s == "" {
		return append(b, '_')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '.' || c == '*' || c == '>' {
			c = '_'
		}
		b = append(b, c)
	}
	return b
}
