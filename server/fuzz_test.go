package server

import "testing"

// FuzzDecode: any body decodes to a request or a 400, never a panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stop":["a"],"n":2,"logit_bias":{"1":-100}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"temperature":0.5,"top_p":0.9}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
		`{"prompt":[1,2,3],"echo":true,"logprobs":2,"stop":"x","response_format":{"type":"text"}}`,
		`{"prompt":"x","seed":-1,"stream":true,"stream_options":{"include_usage":true}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var c chatRequest
		if err := decodeBody(body, &c); err == nil {
			if _, err := c.messages(); err == nil {
				c.params(1000)
			}
		} else if err.status != 400 {
			t.Fatalf("status %d", err.status)
		}
		var p completionRequest
		if decodeBody(body, &p) == nil {
			p.params(1000)
			parseStop(p.Stop)
		}
	})
}
