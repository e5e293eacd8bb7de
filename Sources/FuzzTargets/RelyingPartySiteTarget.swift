import Basics
import Foundation
import JSON
import RelyingParty
import WebAuthn
import WebRelyingParty

/// `passkey rp serve`'s other input: what a browser, or anything that reaches the port, posts. Each input starts a
/// ceremony as a page does (with a challenge from a counter, so seeds can answer it), then posts its body to the
/// endpoint its first byte picks. Whatever comes, the answer is JSON, a refusal changes no state, and a
/// verdict is one line.
enum RelyingPartySiteTarget {
    static let origin = "https://example.com"
    static let paths = [
        "/registration/verify", "/authentication/verify", "/registration/options", "/authentication/options",
        "/client-result", "/password/sign-up", "/password/sign-in", "/account/rename", "/credentials/delete",
    ]

    static let site: FuzzTarget = FuzzTarget(
        name: "rp-site",
        summary:
            "a request body posted to rp serve's endpoints after a ceremony began: JSON answers, no state on refusal",
        seeds: {
            let registration = CollectedClientData(type: .create, challenge: challenge(1), origin: origin).jsonBytes
            let authentication = CollectedClientData(type: .get, challenge: challenge(1), origin: origin).jsonBytes
            let id = Array("credential-0".utf8).base64URLEncodedString
            let registrationJSON = """
                {"id":"\(id)","rawId":"\(id)","type":"public-key","authenticatorAttachment":"cross-platform",\
                "response":{"clientDataJSON":"\(registration.base64URLEncodedString)",\
                "attestationObject":"\([0xA3, 0x63] + Array("fmt".utf8) + [0x64] + Array("none".utf8)).base64URLEncodedString)",\
                "transports":["usb"]},"clientExtensionResults":{}}
                """
            let authenticationJSON = """
                {"id":"\(id)","rawId":"\(id)","type":"public-key",\
                "response":{"clientDataJSON":"\(authentication.base64URLEncodedString)",\
                "authenticatorData":"\([UInt8](repeating: 0, count: 37).base64URLEncodedString)",\
                "signature":"MEUCIQ","userHandle":"dXNlcg"},"clientExtensionResults":{}}
                """
            return [
                [0] + Array(registrationJSON.utf8), [1] + Array(authenticationJSON.utf8),
                [2]
                    + Array(
                        #"{"username":"bob","displayName":"Bob","residentKey":"preferred","hints":["hybrid"]}"#.utf8),
                [3] + Array(#"{"username":"alice","userVerification":"required"}"#.utf8),
                [4] + Array(#"{"ceremony":"registration","name":"NotAllowedError","message":"no"}"#.utf8),
                [5] + Array(#"{"username":"carol","password":"correct horse","displayName":"Carol"}"#.utf8),
                [6] + Array(#"{"username":"alice","password":"correct horse"}"#.utf8),
                [7] + Array(#"{"username":"alice","displayName":"Alice Liddell"}"#.utf8),
                [8] + Array(#"{"credentialId":"Y3JlZGVudGlhbC0w"}"#.utf8),
            ]
        },
        run: { input in
            var reader = FuzzInput(input)
            let path = paths[Int(reader.byte() ?? 0) % paths.count]
            let body = reader.rest()
            var counter: UInt8 = 0
            let randomBytes: (Int) -> [UInt8] = { count in
                counter &+= 1
                return challenge(counter, count: count)
            }
            let now = ContinuousClock.now
            let date = Date(timeIntervalSince1970: 1_795_000_000)
            var site = RelyingPartySite(
                relyingParty: WebRelyingParty(
                    configuration: .init(relyingParty: RelyingPartyEntity(id: "example.com"), origins: [origin])),
                state: RelyingPartyState())
            // The ceremony a page starts first: a registration for alice, or for the verify of a sign-in, a discoverable
            // sign-in (no account exists to name).
            let signIn = path == "/authentication/verify"
            let started = site.handle(
                RelyingPartySite.Request(
                    method: "POST", target: signIn ? "/authentication/options" : "/registration/options",
                    host: "example.com", contentType: "application/json",
                    body: Array((signIn ? "{}" : #"{"username":"alice"}"#).utf8)),
                now: now, date: date, randomBytes: randomBytes)
            expect(started.response.status == 200, "the first options were refused: \(started.response.status)")
            let exchange = site.handle(
                RelyingPartySite.Request(
                    method: "POST", target: path, host: "example.com", contentType: "application/json; charset=utf-8",
                    body: body),
                now: now, date: date, randomBytes: randomBytes)
            let status = exchange.response.status
            expect((try? JSONValue(parsing: exchange.response.body)) != nil, "\(path) answered \(status) with no JSON")
            if status != 200 {
                expect(exchange.stateToSave == nil, "\(path) refused with \(status) yet changed the state")
            }
            expect((200..<500).contains(status), "\(path) answered \(status)")
            if let line = exchange.line {
                expect(!line.contains("\n") && !line.contains("\r"), "a verdict line spans lines")
            }
            // A password posted is never printed or answered back.
            if path.hasPrefix("/password/"), case .object(let members)? = try? JSONValue(parsing: body),
                case .string(let password)? = members.first(where: { $0.key == "password" })?.value,
                password.count >= 16, String(decoding: body, as: UTF8.self).components(separatedBy: password).count == 2
            {
                expect(!(exchange.line ?? "").contains(password), "\(path) printed the password")
                expect(
                    !String(decoding: exchange.response.body, as: UTF8.self).contains(password),
                    "\(path) answered with the password")
            }
        })

    /// The challenge the counter's `index`-th call gives: `count` bytes of `index`.
    static func challenge(_ index: UInt8, count: Int = 32) -> [UInt8] {
        [UInt8](repeating: index, count: count)
    }
}
