import Basics
import Crypto
import Foundation
import JSON
import RelyingParty
import RelyingPartyTestSupport
import Testing
import WebAuthn
import WebRelyingParty

/// The HTTP layer without sockets: routes, statuses, headers, the page, and a whole ceremony through `handle`.
struct SiteTests {
    var site = RelyingPartySite(relyingParty: Harness().relyingParty, state: RelyingPartyState())
    var now = ContinuousClock.now

    /// `randomByte` fills every random value the site asks for (challenges, user handles, session tokens).
    mutating func send(
        _ method: String, _ target: String, json body: String? = nil, contentType: String? = nil,
        host: String? = "localhost:8787", cookie: String? = nil, randomByte: UInt8 = 0xAB
    ) -> RelyingPartySite.Exchange {
        let request = RelyingPartySite.Request(
            method: method, target: target, host: host,
            contentType: contentType ?? (body == nil ? nil : "application/json"), cookie: cookie,
            body: Array((body ?? "").utf8))
        return site.handle(
            request, now: now, date: Harness.date, randomBytes: { [UInt8](repeating: randomByte, count: $0) })
    }

    /// Registers `user` with `key`; returns the session cookie (`name=value`) the answer sets.
    mutating func register(
        _ user: String, with key: inout SoftwareAuthenticator, cookie: String? = nil, randomByte: UInt8
    )
        throws -> String
    {
        let options = send(
            "POST", "/registration/options", json: #"{"username":"\#(user)"}"#, cookie: cookie, randomByte: randomByte)
        #expect(options.response.status == 200)
        let registration = send(
            "POST", "/registration/verify",
            json: String(decoding: try key.register(optionsJSON: options.response.body), as: UTF8.self),
            randomByte: randomByte)
        #expect(registration.response.status == 200)
        site.commit(try #require(registration.stateToSave))
        let setCookie = try #require(registration.response.header("Set-Cookie"))
        #expect(setCookie.hasPrefix("passkey-rp-session="))
        #expect(
            setCookie.contains("; HttpOnly") && setCookie.contains("; SameSite=Strict") && setCookie.contains("Path=/"))
        return String(setCookie.prefix { $0 != ";" })
    }

    /// The W3C Well-Known URL for Passkey Endpoints: GET only, JSON, the page's registration form and passkey list
    /// at the origin the request came to; read back by the client's own parser.
    @Test mutating func passkeyEndpointsNameThePageAtTheRequestsOrigin() throws {
        let answer = send("GET", "/.well-known/passkey-endpoints")
        #expect(answer.response.status == 200 && answer.verdict == nil)
        #expect(answer.response.header("Content-Type")?.hasPrefix("application/json") == true)
        let members = try object(answer.response.body)
        #expect(members["enroll"] as? String == Harness.origin + "/#register")
        #expect(members["manage"] as? String == Harness.origin + "/#passkeys")
        #expect(send("POST", "/.well-known/passkey-endpoints", json: "{}").response.status == 405)
    }

    /// Issue 23, attack 2: asking for registration options with an existing user's name was enough to add a passkey
    /// to that account, and then to sign in as its user. Now a verified registration or sign-in starts a session
    /// (an HttpOnly, SameSite=Strict cookie), and options for a user name that has a passkey need a session of that
    /// user.
    @Test mutating func anotherPasskeyForAnExistingUserTakesASessionOfThatUser() throws {
        var alicesKey = SoftwareAuthenticator(origin: Harness.origin)
        let alice = try register("alice", with: &alicesKey, randomByte: 0x01)
        var bobsKey = SoftwareAuthenticator(origin: Harness.origin)
        let bob = try register("bob", with: &bobsKey, randomByte: 0x02)
        let forged = "passkey-rp-session=" + [UInt8](repeating: 0x03, count: 32).base64URLEncodedString
        for cookie in [nil, bob, forged, "other=1", "passkey-rp-session=", "passkey-rp-session=%%%"] {
            let refused = send("POST", "/registration/options", json: #"{"username":"alice"}"#, cookie: cookie)
            #expect(refused.response.status == 403, "\(cookie ?? "no cookie")")
            #expect(try object(refused.response.body)["error"] as? String == "signInRequired")
        }
        #expect(site.relyingParty.pendingCount == 0, "a refused request starts no ceremony")
        // Alice's own browser may add one; her key already holds a credential, so it goes in excludeCredentials.
        let allowed = send(
            "POST", "/registration/options", json: #"{"username":"alice"}"#, cookie: "theme=dark; " + alice)
        #expect(allowed.response.status == 200)
        let excluded = try #require(try object(allowed.response.body)["excludeCredentials"] as? [[String: Any]])
        #expect(excluded.map { $0["id"] as? String } == [alicesKey.credentialID.base64URLEncodedString])
        // A new user name needs no session; a sign-in starts one too.
        #expect(send("POST", "/registration/options", json: #"{"username":"carol"}"#).response.status == 200)
        let request = send("POST", "/authentication/options", json: #"{"username":"bob"}"#, randomByte: 0x04)
        let assertion = try bobsKey.authenticate(optionsJSON: request.response.body)
        let signedIn = send(
            "POST", "/authentication/verify", json: String(decoding: assertion, as: UTF8.self), randomByte: 0x05)
        let session = try #require(signedIn.response.header("Set-Cookie")).prefix { $0 != ";" }
        #expect(
            send("POST", "/registration/options", json: #"{"username":"bob"}"#, cookie: String(session)).response.status
                == 200)
        // Sessions end after their lifetime.
        now += .seconds(12 * 3600)
        #expect(
            send("POST", "/registration/options", json: #"{"username":"alice"}"#, cookie: alice).response.status == 403)
    }

    /// Issue 23, attack 2: with a spoofed `Host` (a page on a domain of its own that resolves to 127.0.0.1, DNS
    /// rebinding) the review read every account, registered its own passkey to `alice` and signed in as her. Every
    /// path now answers 421 for a host it does not serve, before reading anything.
    @Test(arguments: [
        ("GET", "/credentials"), ("GET", "/"), ("POST", "/registration/options"), ("POST", "/authentication/verify"),
    ])
    mutating func aHostThisRelyingPartyDoesNotServeIsRefusedOnEveryPath(method: String, target: String) throws {
        for host in ["evil.example:8787", "evil.example", "localhost.evil.example", "127.0.0.2:8787", "", nil] {
            let exchange = send(method, target, json: method == "POST" ? #"{"username":"alice"}"# : nil, host: host)
            #expect(exchange.response.status == 421, "\(host ?? "no Host")")
            #expect(try object(exchange.response.body)["error"] as? String == "misdirectedRequest")
            #expect(exchange.stateToSave == nil)
        }
        for host in ["localhost:8787", "LOCALHOST", "127.0.0.1:9", "[::1]:8787"] {
            #expect(send("GET", "/credentials", host: host).response.status == 200, "\(host)")
        }
    }

    @Test func theHostNamesAreTheLoopbackOnesTheOriginsAndTheExtraOnes() {
        let names = RelyingPartySite.hostNames(
            origins: ["https://login.example.com", "http://localhost:8787", "http://[::1]:8787"],
            extra: ["Proxy.Internal"])
        #expect(names == ["localhost", "127.0.0.1", "[::1]", "login.example.com", "proxy.internal"])
    }

    @Test(arguments: [
        ("GET", "/nowhere", nil as String?, 404, "notFound"),
        ("GET", "/registration/options", nil, 405, "methodNotAllowed"),
        ("POST", "/", "{}", 405, "methodNotAllowed"),
        ("HEAD", "/credentials", nil, 405, "methodNotAllowed"),
        ("POST", "/registration/options", "{", 400, "badJSON"),
        ("POST", "/registration/options", #"{"username":"a b"}"#, 400, "invalidRequest"),
        ("POST", "/authentication/options", #"{"username":"nobody"}"#, 400, "unknownUser"),
        ("POST", "/registration/verify", "{}", 400, "malformedResponse"),
        ("POST", "/authentication/verify", "[]", 400, "badJSON"),
        ("POST", "/client-result", #"{"ceremony":"registration"}"#, 400, "invalidRequest"),
    ])
    mutating func refusals(method: String, target: String, body: String?, status: Int, code: String) throws {
        let exchange = send(method, target, json: body)
        #expect(exchange.response.status == status)
        #expect(exchange.response.header("content-type") == "application/json; charset=utf-8")
        #expect(try object(exchange.response.body)["error"] as? String == code)
        #expect(exchange.stateToSave == nil)
        if status == 405 {
            #expect(exchange.response.header("Allow") == (["/", "/credentials"].contains(target) ? "GET" : "POST"))
        }
    }

    @Test mutating func postBodiesMustBeJSON() throws {
        for contentType in ["text/plain", "application/x-www-form-urlencoded", "application/jsonx"] {
            let exchange = send("POST", "/registration/options", json: #"{"username":"a"}"#, contentType: contentType)
            #expect(exchange.response.status == 415)
        }
        #expect(
            send(
                "POST", "/registration/options", json: #"{"username":"a"}"#,
                contentType: "Application/JSON; charset=UTF-8"
            )
            .response.status == 200)
        #expect(site.relyingParty.pendingCount == 1)
    }

    @Test mutating func thePageIsSelfContainedAndItsPolicyAllowsExactlyItsInlineCode() throws {
        let exchange = send("GET", "/?auto=register&user=alice&hints=hybrid")
        #expect(exchange.response.status == 200)
        #expect(exchange.response.header("Content-Type") == "text/html; charset=utf-8")
        let html = String(decoding: exchange.response.body, as: UTF8.self)
        #expect(html.contains(#"autocomplete="username webauthn""#))
        #expect(html.contains(#"<pre id="verdict""#))
        for marker in [
            "parseCreationOptionsFromJSON", "parseRequestOptionsFromJSON", "toJSON", "/client-result",
            #"mediation: "conditional""#, "AbortController", "getClientCapabilities", "document.title",
        ] {
            #expect(html.contains(marker), "\(marker)")
        }
        #expect(!html.contains("src=") && !html.contains("href="))  // nothing loaded from elsewhere
        let policy = try #require(exchange.response.header("Content-Security-Policy"))
        #expect(policy.hasPrefix("default-src 'none'; "))
        for (open, close, directive) in [("<script>", "</script>", "script-src"), ("<style>", "</style>", "style-src")]
        {
            let start = try #require(html.range(of: open)).upperBound
            let end = try #require(html.range(of: close)).lowerBound
            let digest = Data(SHA256.hash(data: Array(html[start..<end].utf8))).base64EncodedString()
            #expect(policy.contains("\(directive) 'sha256-\(digest)'"))
        }
        #expect(send("GET", "/favicon.ico").response.status == 204)
    }

    @Test mutating func aWholeCeremonyThroughTheRoutes() throws {
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let options = send("POST", "/registration/options", json: #"{"username":"alice","hints":["security-key"]}"#)
        #expect(options.response.status == 200 && options.verdict == nil)
        let registration = send(
            "POST", "/registration/verify",
            json: String(decoding: try key.register(optionsJSON: options.response.body), as: UTF8.self))
        #expect(registration.response.status == 200)
        #expect(registration.line?.hasPrefix("verdict registration ok user=alice credential=") == true)
        let newState = try #require(registration.stateToSave)
        // Not kept until committed: the adapter saves first.
        #expect(site.state.accounts.isEmpty)
        site.commit(newState)

        let credentials = try object(send("GET", "/credentials").response.body)
        #expect(credentials["rpId"] as? String == "localhost")
        #expect(credentials["origins"] as? [String] == [Harness.origin])
        let accounts = try #require(credentials["accounts"] as? [[String: Any]])
        #expect(accounts.count == 1)
        #expect(accounts.first?["user"] as? String == "alice")
        #expect(accounts.first?["credentialId"] as? String == key.credentialID.base64URLEncodedString)
        #expect(accounts.first?["transports"] as? [String] == ["usb"])
        #expect(accounts.first?["registered"] as? String == "2027-01-15T08:00:00Z")

        let request = send("POST", "/authentication/options", json: #"{"username":"alice"}"#)
        let assertion = try key.authenticate(optionsJSON: request.response.body)
        let signedIn = send("POST", "/authentication/verify", json: String(decoding: assertion, as: UTF8.self))
        #expect(signedIn.response.status == 200)
        #expect(signedIn.line?.hasPrefix("verdict authentication ok user=alice") == true)
        #expect(signedIn.line?.contains("signCount=1") == true)
        let replay = send("POST", "/authentication/verify", json: String(decoding: assertion, as: UTF8.self))
        #expect(replay.response.status == 409)
        #expect(replay.line?.hasPrefix("verdict authentication refused code=challengeReplayed") == true)

        let failed = signedIn.savingFailed("disk full")
        #expect(failed.response.status == 500 && failed.stateToSave == nil)
        #expect(failed.line?.hasPrefix("verdict authentication refused code=stateNotSaved user=alice reason=") == true)
    }

    @Test mutating func clientResultsAreRecorded() throws {
        let exchange = send(
            "POST", "/client-result", json: #"{"ceremony":"registration","name":"InvalidStateError","message":"m"}"#)
        #expect(exchange.response.status == 200)
        #expect(exchange.line == "verdict client error ceremony=registration name=InvalidStateError message=m")
    }

    @Test(arguments: [
        ("http://127.0.0.1:8787", ["http://localhost:8787"], "http://localhost:8787"),
        ("http://[::1]:8787", ["http://localhost:8787"], "http://localhost:8787"),
        // Not a loopback address, or localhost not an origin: the address the server listens on.
        ("http://192.0.2.7:8787", ["http://localhost:8787"], "http://192.0.2.7:8787"),
        ("http://127.0.0.1:8787", ["https://example.com"], "http://127.0.0.1:8787"),
        ("http://127.0.0.1:8787", ["http://localhost:9999"], "http://127.0.0.1:8787"),
    ])
    func theAddressToOpenIsTheOriginTheCeremoniesWorkAt(listening: String, origins: [String], expected: String) {
        #expect(RelyingPartySite.addressToOpen(origins: Set(origins), listeningOn: listening, port: 8787) == expected)
    }

    /// Issue 24, item 10: each answer carries what the authenticator returned, decoded; a refused one too.
    @Test mutating func answersShowTheResponseDecoded() throws {
        var key = SoftwareAuthenticator(origin: Harness.origin)
        let options = send("POST", "/registration/options", json: #"{"username":"alice"}"#)
        let body = try key.register(optionsJSON: options.response.body)
        let registration = send("POST", "/registration/verify", json: String(decoding: body, as: UTF8.self))
        site.commit(try #require(registration.stateToSave))
        let decoded = try #require(try object(registration.response.body)["decoded"] as? [String: Any])
        let clientData = try #require(decoded["clientData"] as? [String: Any])
        #expect(clientData["type"] as? String == "webauthn.create")
        #expect(clientData["origin"] as? String == Harness.origin)
        let attestation = try #require(decoded["attestation"] as? [String: Any])
        #expect(attestation["format"] as? String == "none")
        let authData = try #require(attestation["authenticatorData"] as? [String: Any])
        #expect(authData["rpIdHash"] as? String == SHA256.hash(data: Array("localhost".utf8)).hexString)
        let flags = try #require(authData["flags"] as? [String: Any])
        #expect(flags["userPresent"] as? Bool == true && flags["attestedCredentialData"] as? Bool == true)
        #expect(authData["credentialId"] as? String == key.credentialID.base64URLEncodedString)
        let jwk = try #require(authData["credentialPublicKey"] as? [String: Any])
        let raw = Array(key.key.publicKey.rawRepresentation)
        #expect(jwk["kty"] as? String == "EC" && jwk["crv"] as? String == "P-256" && jwk["alg"] as? String == "ES256")
        #expect(jwk["x"] as? String == Array(raw[0..<32]).base64URLEncodedString)
        #expect(jwk["y"] as? String == Array(raw[32..<64]).base64URLEncodedString)

        let request = send("POST", "/authentication/options", json: #"{"username":"alice"}"#)
        let assertion = try key.authenticate(optionsJSON: request.response.body)
        let signedIn = send("POST", "/authentication/verify", json: String(decoding: assertion, as: UTF8.self))
        let signedInDecoded = try #require(try object(signedIn.response.body)["decoded"] as? [String: Any])
        #expect((signedInDecoded["clientData"] as? [String: Any])?["type"] as? String == "webauthn.get")
        #expect((signedInDecoded["authenticatorData"] as? [String: Any])?["signCount"] as? Int == 1)
        #expect(((signedInDecoded["signature"] as? [String: Any])?["bytes"] as? Int ?? 0) >= 64)
        // A refusal (the challenge replayed) still shows what arrived.
        let replay = send("POST", "/authentication/verify", json: String(decoding: assertion, as: UTF8.self))
        #expect(replay.response.status == 409)
        #expect(try object(replay.response.body)["decoded"] is [String: Any])
        // Garbage in the parts: each says so in its place; nothing crashes.
        let broken = DecodedResponse.decode(
            Array(#"{"response":{"clientDataJSON":"e30","attestationObject":"oWFh"}}"#.utf8))
        let expected = #"{"clientData":{},"attestation":{"error":"the attestation object is not a CBOR map"}}"#
        #expect(broken.map { String(decoding: $0.serialized(), as: UTF8.self) } == expected)
        #expect(DecodedResponse.decode(Array("[]".utf8)) == nil)
    }

    /// Issue 24, item 10: a browser signed in as the passkey's user deletes it; nobody else can.
    @Test mutating func aSignedInUserDeletesTheirOwnPasskeyOnly() throws {
        var alicesKey = SoftwareAuthenticator(origin: Harness.origin)
        let alice = try register("alice", with: &alicesKey, randomByte: 0x01)
        var bobsKey = SoftwareAuthenticator(origin: Harness.origin)
        let bob = try register("bob", with: &bobsKey, randomByte: 0x02)
        let target = #"{"credentialId":"\#(alicesKey.credentialID.base64URLEncodedString)"}"#
        for cookie in [nil, bob, "passkey-rp-session=forged"] {
            let refused = send("POST", "/credentials/delete", json: target, cookie: cookie)
            #expect(refused.response.status == 403 && refused.stateToSave == nil, "\(cookie ?? "no cookie")")
        }
        let unknown = send("POST", "/credentials/delete", json: #"{"credentialId":"AAAA"}"#, cookie: alice)
        #expect(unknown.response.status == 404 && unknown.stateToSave == nil)
        #expect(send("POST", "/credentials/delete", json: "{}", cookie: alice).response.status == 400)
        #expect(send("GET", "/credentials/delete").response.status == 405)

        let deleted = send("POST", "/credentials/delete", json: target, cookie: alice)
        #expect(deleted.response.status == 200)
        #expect(
            deleted.line == "verdict deletion ok user=alice credential=\(alicesKey.credentialID.base64URLEncodedString)"
        )
        let newState = try #require(deleted.stateToSave)
        #expect(newState.accounts.map(\.userName) == ["bob"])
        site.commit(newState)
        #expect(send("POST", "/credentials/delete", json: target, cookie: alice).response.status == 404)
    }
}
