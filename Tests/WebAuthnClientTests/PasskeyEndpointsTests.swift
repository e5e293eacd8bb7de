import PublicSuffix
import Synchronization
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

/// `passkey list --endpoints`: each RP ID asked once, every answer its own entry.
struct ManageLinkTests {
    final class Fetches: Sendable {
        let names = Mutex<[String]>([])
    }

    @Test func eachSiteIsAskedOnceAndAFailureIsOnlyItsOwn() async {
        let fetches = Fetches()
        let links = await PasskeyEndpoints.manageLinks(
            for: ["example.com", "shop.example", "example.com", "none.example", "[::1]", "down.example"],
            maximumConcurrent: 2
        ) { (name) throws(PasskeyEndpointsError) in
            fetches.names.withLock { $0.append("\(name)") }
            switch "\(name)" {
            case "example.com": return PasskeyEndpoints(manage: "https://example.com/account/passkeys")
            case "none.example": return PasskeyEndpoints(enroll: "https://none.example/new")
            case "down.example": throw PasskeyEndpointsError("the connection was refused")
            default: throw PasskeyEndpointsError("the status was 404, not 200")
            }
        }
        #expect(
            links == [
                "example.com": .manage("https://example.com/account/passkeys"),
                "shop.example": .unavailable("the status was 404, not 200"),
                "none.example": .noManageURL,
                "[::1]": .notADomain,
                "down.example": .unavailable("the connection was refused"),
            ])
        #expect(
            fetches.names.withLock { $0 }.sorted() == ["down.example", "example.com", "none.example", "shop.example"])
    }
}
