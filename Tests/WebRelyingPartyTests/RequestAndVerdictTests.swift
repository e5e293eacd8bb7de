import Crypto
import Foundation
import RelyingParty
import Testing
import WebAuthn
import WebRelyingParty

/// Options request bodies, client reports and the verdict line format.
struct RequestAndVerdictTests {
    @Test func registrationRequestMembersAndDefaults() throws {
        let minimal = try RegistrationOptionsRequest(json: Array(#"{"username":"alice","unknown":1}"#.utf8))
        #expect(minimal == RegistrationOptionsRequest(userName: "alice"))
        #expect(
            minimal.residentKey == .required && minimal.userVerification == .preferred && minimal.attestation == .none)
        let full = try RegistrationOptionsRequest(
            json: Array(
                #"{"username":"bob@example.org","displayName":"Bob Builder","residentKey":"preferred","userVerification":"discouraged","attestation":"direct","hints":["hybrid"]}"#
                    .utf8))
        #expect(
            full
                == RegistrationOptionsRequest(
                    userName: "bob@example.org", displayName: "Bob Builder", residentKey: .preferred,
                    userVerification: .discouraged, attestation: .direct, hints: ["hybrid"]))
        #expect(
            try RegistrationOptionsRequest(json: Array(#"{"username":"é😀","displayName":null}"#.utf8)).userName == "é😀")
    }

    @Test(arguments: [
        #"{}"#, #"{"username":""}"#, #"{"username":"a b"}"#, #"{"username":"a\u0000b"}"#, #"{"username":7}"#,
        #"{"username":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#,
        #"{"username":"a","residentKey":"always"}"#, #"{"username":"a","userVerification":true}"#,
        #"{"username":"a","hints":"hybrid"}"#, #"{"username":"a","hints":["hy brid"]}"#,
        #"{"username":"a","hints":["a","b","c","d","e","f","g","h","i"]}"#,
        #"{"username":"a","displayName":"line\nbreak"}"#, #"{"username":"a","attestation":"none "}"#,
    ])
    func registrationRequestsRefused(body: String) {
        #expect(throws: JSONBodyError.self) { try RegistrationOptionsRequest(json: Array(body.utf8)) }
    }

    @Test func authenticationRequests() throws {
        #expect(try AuthenticationOptionsRequest(json: Array("{}".utf8)) == AuthenticationOptionsRequest())
        #expect(try AuthenticationOptionsRequest(json: Array(#"{"username":""}"#.utf8)).userName == nil)
        #expect(
            try AuthenticationOptionsRequest(
                json: Array(#"{"username":"alice","userVerification":"required","hints":["security-key"]}"#.utf8))
                == AuthenticationOptionsRequest(userName: "alice", userVerification: .required, hints: ["security-key"])
        )
        #expect(throws: JSONBodyError.notJSON) { try AuthenticationOptionsRequest(json: []) }
        #expect(throws: JSONBodyError.self) {
            try AuthenticationOptionsRequest(json: Array(#"{"userVerification":"maybe"}"#.utf8))
        }
    }

    @Test func clientResults() throws {
        let result = try ClientResult(
            json: Array(#"{"ceremony":"registration","name":"InvalidStateError","message":"already\nregistered"}"#.utf8)
        )
        #expect(
            result == ClientResult(ceremony: "registration", name: "InvalidStateError", message: "already\nregistered"))
        for body in [
            #"{"ceremony":"registration"}"#, #"{"ceremony":"x y","name":"E"}"#,
            #"{"ceremony":"r","name":"Not Allowed"}"#,
            #"{"ceremony":"r","name":"E","message":"\#(String(repeating: "m", count: 1001))"}"#,
        ] {
            #expect(throws: JSONBodyError.self) { try ClientResult(json: Array(body.utf8)) }
        }
    }

    static let record = CredentialRecord(
        id: [0xFB, 0xEF, 0x01], publicKey: COSEKey(publicKey: P256.Signing.PrivateKey().publicKey),
        signCount: 5, backupEligible: true, backupState: true, uvInitialized: true, userHandle: [7],
        aaguid: AAGUID(bytes: Array(0..<16))!, transports: ["usb", "hybrid"])

    @Test func verdictLines() {
        #expect(
            Verdict.registered(
                AcceptedResponse(
                    userName: "alice", credential: Self.record, userVerified: true, authenticatorAttachment: nil)
            ).line
                == "verdict registration ok user=alice credential=--8B uv=true transports=usb,hybrid attachment=unknown "
                + "attestation=none aaguid=00010203-0405-0607-0809-0a0b0c0d0e0f alg=ES256")
        #expect(
            Verdict.authenticated(
                AcceptedResponse(
                    userName: "al ice%", credential: Self.record, userVerified: false,
                    authenticatorAttachment: "platform")
            ).line
                == "verdict authentication ok user=al%20ice%25 credential=--8B uv=false signCount=5 attachment=platform"
        )
        #expect(
            Verdict.refused(.registration, WebRelyingPartyError(.challengeReplayed, "used\nbefore"), userName: nil).line
                == "verdict registration refused code=challengeReplayed reason=used before")
        #expect(
            Verdict.refused(.authentication, WebRelyingPartyError(.init(.originMismatch), "x"), userName: "bob").line
                == "verdict authentication refused code=originMismatch user=bob reason=x")
        #expect(
            Verdict.clientError(ClientResult(ceremony: "registration", name: "InvalidStateError", message: "a\r\nb"))
                .line
                == "verdict client error ceremony=registration name=InvalidStateError message=a  b")
    }

    @Test func verdictJSON() throws {
        let refused = try object(
            Verdict.refused(.registration, WebRelyingPartyError(.challengeExpired, "late"), userName: "bob").json)
        #expect(
            refused as? [String: String]
                == [
                    "error": "challengeExpired", "message": "late", "verdict": "refused", "ceremony": "registration",
                    "user": "bob",
                ])
        let ok = try object(
            Verdict.authenticated(
                AcceptedResponse(
                    userName: "alice", credential: Self.record, userVerified: true, authenticatorAttachment: nil)
            ).json)
        #expect(ok["verdict"] as? String == "ok" && ok["ceremony"] as? String == "authentication")
        #expect(ok["user"] as? String == "alice" && ok["credentialId"] as? String == "--8B")
        #expect((ok["signCount"] as? NSNumber)?.intValue == 5 && ok["userVerified"] as? Bool == true)
        #expect(ok["authenticatorAttachment"] == nil)
    }

    @Test(arguments: [
        (WebRelyingPartyError.Code.badJSON, 400), (.challengeReplayed, 409), (.credentialAlreadyRegistered, 409),
        (.notFound, 404), (.methodNotAllowed, 405), (.payloadTooLarge, 413), (.unsupportedMediaType, 415),
        (.headersTooLarge, 431), (.stateNotSaved, 500), (.init(.unknownCredential), 400), (.init(.originMismatch), 400),
    ])
    func statuses(code: WebRelyingPartyError.Code, status: Int) {
        #expect(code.status == status)
    }
}
