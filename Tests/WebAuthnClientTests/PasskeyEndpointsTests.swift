import PublicSuffix
import Testing
import WebAuthnClient

/// The Well-Known URL for Passkey Endpoints, read with the related origins document's rules.
struct PasskeyEndpointsTests {
    static func response(_ body: String, status: Int = 200, type: String? = "application/json") -> WellKnownResponse {
        WellKnownResponse(status: status, contentType: type, body: Array(body.utf8))
    }

    @Test func bothOrEitherURLAreRead() throws {
        let both = try PasskeyEndpoints(
            response: Self.response(
                #"{"enroll":"https://example.com/passkeys/new","manage":"https://example.com/passkeys","x":1}"#,
                type: "application/json; charset=utf-8"))
        #expect(
            both == PasskeyEndpoints(enroll: "https://example.com/passkeys/new", manage: "https://example.com/passkeys")
        )
        #expect(try PasskeyEndpoints(document: Array(#"{"manage":"https://a.example/m"}"#.utf8)).enroll == nil)
        // rp serve on this machine serves http://localhost URLs, which browsers treat as secure.
        #expect(
            try PasskeyEndpoints(document: Array(#"{"manage":"http://localhost:8787/#passkeys"}"#.utf8)).manage != nil)
        #expect(
            PasskeyEndpoints.wellKnownURL(for: try .init("example.com"))
                == "https://example.com/.well-known/passkey-endpoints")
    }

    @Test(arguments: [
        (
            response(#"{"manage":"https://e.example/"}"#, status: 302),
            "the status was 302, not 200 (a redirect: they are not followed)"
        ),
        (
            response(#"{"manage":"https://e.example/"}"#, type: "text/html"),
            #"the content type was "text/html", not application/json"#
        ),
        (response(#"{"manage":"https://e.example/"}"#, type: nil), "the content type was absent, not application/json"),
        (response("[1]"), "the document is JSON but not an object"),
        (response("{"), "the document is not JSON"),
        (response(#"{"enroll":1}"#), #""enroll" is not a string"#),
        (response(#"{"manage":true}"#), #""manage" is not a string"#),
        (response(#"{"manage":"http://example.com/"}"#), #""manage" is not an https URL with a host"#),
        (response(#"{"manage":"javascript:alert(1)"}"#), #""manage" is not an https URL with a host"#),
        (response(#"{"manage":"https://user:pw@example.com/"}"#), #""manage" is not an https URL with a host"#),
        (response(#"{"manage":"/relative"}"#), #""manage" is not an https URL with a host"#),
        (response(#"{"other":"https://example.com/"}"#), #"the document names neither "enroll" nor "manage""#),
        (
            response("{\"manage\":\"https://e.example/" + String(repeating: "a", count: 17_000) + "\"}"),
            "the document is over 16384 bytes"
        ),
    ])
    func badResponsesAreRefusedInOneLine(response: WellKnownResponse, message: String) {
        let error = #expect(throws: PasskeyEndpointsError.self) { try PasskeyEndpoints(response: response) }
        #expect(error?.description == message)
    }
}
