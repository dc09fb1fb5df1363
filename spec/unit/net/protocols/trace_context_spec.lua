-- Specs for the trace ids of tracing headers: W3C traceparent, SkyWalking
-- sw8 (base64 fields), Zipkin's b3 single header and x-b3-traceid; valid
-- values give the id, anything else nil.
local tc = require("moonrover.net.protocols.trace_context")

describe("trace_context.traceparent", function()
  it("gives the trace id, lowercased", function()
    assert.same("4bf92f3577b34da6a3ce929d0e0e4736",
      tc.traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
    assert.same("4bf92f3577b34da6a3ce929d0e0e4736",
      tc.traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-00"))
  end)

  it("lets a later version append fields, not version 00", function()
    assert.same("4bf92f3577b34da6a3ce929d0e0e4736",
      tc.traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next"))
    assert.is_nil(tc.traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"))
    assert.is_nil(tc.traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01extra"))
  end)

  it("refuses version ff, zero ids, wrong lengths and non-hex", function()
    assert.is_nil(tc.traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
    assert.is_nil(tc.traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"))
    assert.is_nil(tc.traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"))
    assert.is_nil(tc.traceparent("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"))
    assert.is_nil(tc.traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01"))
    assert.is_nil(tc.traceparent("00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"))
    assert.is_nil(tc.traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1"))
    assert.is_nil(tc.traceparent(""))
  end)
end)

describe("trace_context.sw8", function()
  local SW8 = "1-MWYyZDRiZjQ3YmY3MTFlYWI3OTRhY2RlNDgwMDExMjI=-MWYyZDRiZjQ3YmY3MTFlYWI3OTRhY2RlNDgwMDExMjM=-0-"
    .. "c2VydmljZQ==-aW5zdGFuY2U=-L2FwaQ==-MTI3LjAuMC4xOjgw"

  it("decodes the trace id, the second field", function()
    assert.same("1f2d4bf47bf711eab794acde48001122", tc.sw8(SW8))
    -- SkyWalking's own ids hold dots; unpadded base64 is read too.
    assert.same("a.b.c", tc.sw8("0-YS5iLmM-x-1-x-x-x-x"))
  end)

  it("refuses a wrong field count, a bad sample flag, bad or empty base64", function()
    assert.is_nil(tc.sw8("1-MWYyZDRi-x-0-x-x-x"))
    assert.is_nil(tc.sw8(SW8 .. "-extra"))
    assert.is_nil(tc.sw8("2-YS5iLmM=-x-1-x-x-x-x"))
    assert.is_nil(tc.sw8("1-YS5i*mM=-x-1-x-x-x-x"))
    assert.is_nil(tc.sw8("1-YS5iL-x-1-x-x-x-x"))
    assert.is_nil(tc.sw8("1--x-1-x-x-x-x"))
    -- Decodes to bytes that are not printable.
    assert.is_nil(tc.sw8("1-AAEC-x-1-x-x-x-x"))
  end)
  it("gives the segment id (third field, decoded) and the span id (fourth) for span references", function()
    assert.same({ "1f2d4bf47bf711eab794acde48001123", "0" }, { tc.sw8_span(SW8) })
    assert.same({ "a.b", "12" }, { tc.sw8_span("0-YS5iLmM-YS5i-12-x-x-x-x") })
    assert.is_nil(tc.sw8_span("0-YS5iLmM-YS5i-x-x-x-x-x"))
    assert.is_nil(tc.sw8_span("0-YS5iLmM-*-1-x-x-x-x"))
    assert.is_nil(tc.sw8_span("1-MWYyZDRi-x-0-x-x-x"))
  end)
end)

describe("trace_context.b3", function()
  it("gives the trace id of every form that has one", function()
    assert.same("80f198ee56343ba864fe8b2a57d3eff7", tc.b3("80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1"))
    assert.same("80f198ee56343ba864fe8b2a57d3eff7", tc.b3("80F198EE56343BA864FE8B2A57D3EFF7-e457b5a2e4d86bd1-1"))
    assert.same("a3ce929d0e0e4736", tc.b3("a3ce929d0e0e4736-e457b5a2e4d86bd1-d-05e3ac9a4f6e3b90"))
  end)

  it("refuses sampling-only values and malformed ones", function()
    assert.is_nil(tc.b3("0"))
    assert.is_nil(tc.b3("d"))
    assert.is_nil(tc.b3("80f198ee56343ba8-e457b5a2e4d86bd"))
    assert.is_nil(tc.b3("80f198ee56343ba-e457b5a2e4d86bd1"))
    assert.is_nil(tc.b3("0000000000000000-e457b5a2e4d86bd1"))
    assert.is_nil(tc.b3("80f198ee56343ba8-e457b5a2e4d86bd1-2"))
    assert.is_nil(tc.b3("80f198ee56343ba8-e457b5a2e4d86bd1-1-05e3ac9a"))
  end)
end)

describe("trace_context.x_b3_traceid", function()
  it("takes 16 or 32 hex digits", function()
    assert.same("463ac35c9f6413ad", tc.x_b3_traceid("463AC35C9F6413AD"))
    assert.same("463ac35c9f6413ad48485a3953bb6124", tc.x_b3_traceid("463ac35c9f6413ad48485a3953bb6124"))
    assert.is_nil(tc.x_b3_traceid("463ac35c9f6413a"))
    assert.is_nil(tc.x_b3_traceid("463ac35c9f6413ag"))
    assert.is_nil(tc.x_b3_traceid("0000000000000000"))
  end)

  it("maps each header name to its reader, in the order they are preferred", function()
    assert.same({ "sw8", "traceparent", "b3", "x-b3-traceid" }, tc.HEADERS)
    for _, name in ipairs(tc.HEADERS) do
      assert.is_function(tc.BY_HEADER[name])
    end
  end)
end)
