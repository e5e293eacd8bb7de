import Testing
import WebAuthn

struct CollectedClientDataTests {
    static let challenge: [UInt8] = Array(0..<32)

    /// Byte for byte what Chrome writes for `navigator.credentials.create()` on https://example.com.
    @Test func writesJSONAsChromeDoes() {
        let data = CollectedClientData(type: .create, challenge: Self.challenge, origin: "https://example.com")
        let expected =
            #"{"type":"webauthn.create","challenge":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8","origin":"https://example.com","crossOrigin":false}"#
        #expect(String(decoding: data.jsonBytes, as: UTF8.self) == expected)
    }

    @Test func writesCrossOriginAndTopOriginLast() {
        let data = CollectedClientData(
            type: .get, challenge: [0xFB, 0xFF], origin: "https://example.org", crossOrigin: true,
            topOrigin: "https://example.com")
        let expected =
            #"{"type":"webauthn.get","challenge":"-_8","origin":"https://example.org","crossOrigin":true,"topOrigin":"https://example.com"}"#
        #expect(String(decoding: data.jsonBytes, as: UTF8.self) == expected)
    }

    /// CCDToString (WebAuthn §5.8.1.2): `"` and `\` are backslash-escaped, U+0000–U+001F become
    /// `\u00xx` in lower-case hex, and everything else, `/` and non-ASCII included, is written as is.
    @Test(arguments: [
        ("a\"b", #""a\"b""#), ("a\\b", #""a\\b""#), ("\u{0}\u{1F}", #""\u0000\u001f""#), ("\n\t", #""\u000a\u0009""#),
        ("https://exämple.com/ü", #""https://exämple.com/ü""#), ("\u{7F}", "\"\u{7F}\""), ("😀", "\"😀\""),
    ])
    func escapesAsTheSpecificationSays(origin: String, quoted: String) throws {
        let data = CollectedClientData(type: .create, challenge: [1], origin: origin)
        let json = String(decoding: data.jsonBytes, as: UTF8.self)
        #expect(json.contains(#","origin":"# + quoted + ","))
        // A full JSON parser reads back the original string.
        #expect(try CollectedClientData(jsonBytes: data.jsonBytes).origin == origin)
    }

    @Test func parsesWhatItWrites() throws {
        let data = CollectedClientData(
            type: .get, challenge: Self.challenge, origin: "https://example.org", crossOrigin: true,
            topOrigin: "https://example.com")
        #expect(try CollectedClientData(jsonBytes: data.jsonBytes) == data)
    }

    /// Relying parties must parse, not template-match: other key orders, whitespace and extra keys.
    @Test func parsesOtherLayouts() throws {
        let json = """
            {
              "challenge" : "AAEC",
              "origin" : "https://example.com",
              "other_keys_can_be_added_here" : "do not compare clientDataJSON against a template",
              "tokenBinding" : { "status" : "supported" },
              "type" : "webauthn.create"
            }
            """
        let data = try CollectedClientData(jsonBytes: Array(json.utf8))
        #expect(data.type == "webauthn.create")
        #expect(data.challenge == [0, 1, 2])
        #expect(data.origin == "https://example.com")
        #expect(data.crossOrigin == false)
        #expect(data.topOrigin == nil)
    }

    @Test(arguments: [
        "", "not json", "[]", "\"text\"", #"{"challenge":"AAEC","origin":"https://example.com"}"#,
        #"{"type":1,"challenge":"AAEC","origin":"https://example.com"}"#,
        #"{"type":"webauthn.get","origin":"https://example.com"}"#,
        #"{"type":"webauthn.get","challenge":"AA+/","origin":"https://example.com"}"#,
        #"{"type":"webauthn.get","challenge":"AAEC"}"#,
        #"{"type":"webauthn.get","challenge":"AAEC","origin":null}"#,
    ])
    func refusesMalformedJSON(json: String) {
        #expect(throws: ClientDataError.self) { try CollectedClientData(jsonBytes: Array(json.utf8)) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: ClientDataError.self) { try CollectedClientData(jsonBytes: [0x7B, 0xFF, 0x7D]) }
    }
}
