import JSON
import WebAuthnClient

/// The WebAuthn client's input: options JSON as relying parties' servers write it.
enum ClientOptionsTargets {
    static let clientOptions: FuzzTarget = FuzzTarget(
        name: "client-options",
        summary:
            "creation, request and signal options JSON: re-serialized text, compact or pretty, gives the same value and "
            + "options",
        seeds: {
            [
                #"{"rp":{"name":"Example","id":"example.com"},"user":{"id":"AQID","name":"alice","displayName":"Alice"},"challenge":"AAECAwQFBgcICQoLDA0ODw","pubKeyCredParams":[{"type":"public-key","alg":-7},{"type":"public-key","alg":-257}],"timeout":60000,"excludeCredentials":[{"id":"AQIDBAUGBwg","type":"public-key","transports":["internal","hybrid"]}],"authenticatorSelection":{"residentKey":"preferred","requireResidentKey":false,"userVerification":"preferred","authenticatorAttachment":"platform"},"attestation":"none","hints":["client-device"],"extensions":{"credProps":true,"prf":{},"largeBlob":{"support":"preferred"},"credentialProtectionPolicy":"userVerificationRequired","enforceCredentialProtectionPolicy":true,"minPinLength":true,"credBlob":"AQ"}}"#,
                #"{"challenge": "cHktd2ViYXV0aG4tY2hhbGxlbmdl", "timeout": 60000, "rpId": "example.com", "allowCredentials": [{"id": "AQIDBAUGBwg", "type": "public-key", "transports": ["usb", "nfc"]}], "userVerification": "required", "extensions": {"prf": {"eval": {"first": "AQID", "second": "BAU"}, "evalByCredential": {"AQIDBAUGBwg": {"first": "Bw"}}}, "getCredBlob": true}}"#,
                #"{"publicKey":{"challenge":"AAECAw","rpId":"example.com","hints":["security-key","hybrid"]},"mediation":"conditional"}"#,
                #"{"a":"\u00e9\ud83d\ude00\n","b":[1.5e3,-0,true,false,null,{}],"a":[[[]]]}"#,
                #"{"rpId":"example.com","credentialId":"AQIDBAUGBwgJCgsMDQ4PEA"}"#,
                #"{"rpId":"example.com","userId":"dXNlcjE","allAcceptedCredentialIds":["AQIDBAUGBwgJCgsMDQ4PEA","AQ"]}"#,
                #"{"rpId":"example.com","userId":"dXNlcjE","name":"alice@example.com","displayName":"Alice"}"#,
            ].map { Array($0.utf8) }
        },
        run: { input in
            guard let parsed = try? JSONValue(parsing: input) else {
                checkRefusal(input)
                return
            }
            // JSON.stringify writes a number that overflowed to ±infinity as null, so text → value → text is stable
            // from the second round on, not the first.
            // Written text can be longer than what was read (escapes, exponents, indentation): read it back without the
            // size limit.
            var unlimited = JSONValue.Limits()
            unlimited.maximumBytes = .max
            let compact = parsed.serialized()
            guard let normalised = try? JSONValue(parsing: compact, limits: unlimited) else {
                fatalError("fuzz invariant broken: serialized JSON does not parse")
            }
            expect(normalised.serialized() == compact, "serializing parsed JSON twice differs")
            let pretty = normalised.serialized(.pretty)
            expect(pretty.count >= compact.count, "pretty JSON is shorter than compact JSON")
            let reparsed = (try? JSONValue(parsing: pretty, limits: unlimited)) ?? .null
            expect(reparsed == normalised, "pretty JSON did not parse back to the same value")
            let value = normalised
            switch (
                Result { () throws(ClientError) in try PublicKeyCredentialCreationOptions(jsonValue: value) },
                Result { () throws(ClientError) in try PublicKeyCredentialCreationOptions(jsonValue: reparsed) }
            ) {
            case (.success(let options), .success(let again)):
                expect(options == again, "creation options depend on the JSON text's layout")
                expect((1...64).contains(options.user.id.count), "a user handle outside 1 to 64 bytes was accepted")
                expect(options.challenge.count <= 1024, "an oversized challenge was accepted")
                expect(options.excludeCredentials.count <= 64, "an oversized exclude list was accepted")
            case (.failure(let error), .failure(let again)):
                expect(error == again, "creation options refused differently after re-serialization")
                check(error)
            default:
                expect(false, "creation options parsed from one layout only")
            }
            switch (
                Result { () throws(ClientError) in try PublicKeyCredentialRequestOptions(jsonValue: value) },
                Result { () throws(ClientError) in try PublicKeyCredentialRequestOptions(jsonValue: reparsed) }
            ) {
            case (.success(let options), .success(let again)):
                expect(options == again, "request options depend on the JSON text's layout")
                expect(options.allowCredentials.allSatisfy { (1...1023).contains($0.id.count) }, "a bad credential ID")
            case (.failure(let error), .failure(let again)):
                expect(error == again, "request options refused differently after re-serialization")
                check(error)
            default:
                expect(false, "request options parsed from one layout only")
            }
            checkSignals(compact: compact, pretty: pretty)
        })

    /// The signal methods' options (`passkey client signal`): the same signal, or the same refusal, from either layout;
    /// IDs within their bounds; a refusal a TypeError, SyntaxError or EncodingError.
    private static func checkSignals(compact: [UInt8], pretty: [UInt8]) {
        for kind in CredentialSignal.Kind.allCases {
            switch (
                Result { () throws(ClientError) in try CredentialSignal(kind: kind, json: compact) },
                Result { () throws(ClientError) in try CredentialSignal(kind: kind, json: pretty) }
            ) {
            case (.success(let signal), .success(let again)):
                expect(signal == again, "a \(kind.rawValue) signal depends on the JSON text's layout")
                switch signal {
                case .unknownCredential(_, let id):
                    expect((1...1023).contains(id.count), "a bad credential ID in a signal")
                case .allAcceptedCredentials(_, let user, let ids):
                    expect((1...64).contains(user.count), "a bad user handle in a signal")
                    expect(ids.count <= CredentialSignal.maximumAcceptedCredentials, "too many accepted credentials")
                    expect(ids.allSatisfy { (1...1023).contains($0.count) }, "a bad accepted credential ID")
                case .currentUserDetails(_, let user, _, _):
                    expect((1...64).contains(user.count), "a bad user handle in a signal")
                }
            case (.failure(let error), .failure(let again)):
                expect(error == again, "a \(kind.rawValue) signal refused differently after re-serialization")
                expect(
                    [.typeError, .syntaxError, .encodingError].contains(error.name),
                    "a bad \(kind.rawValue) signal raised \(error.name.rawValue)")
                check(error)
            default:
                expect(false, "a \(kind.rawValue) signal parsed from one layout only")
            }
        }
    }

    /// Text that is not JSON is a SyntaxError (or too large to read), never anything else.
    private static func checkRefusal(_ input: [UInt8]) {
        do {
            _ = try JSONValue(parsing: input)
        } catch {
            let refusal = ClientError(error)
            expect(
                refusal.name == .syntaxError || refusal.name == .typeError,
                "unparseable JSON raised \(refusal.name.rawValue)")
            check(refusal)
        }
    }

    /// Every error has a one-line description and an exit status of its own range.
    private static func check(_ error: ClientError) {
        expect((10...17).contains(error.exitStatus), "an exit status outside 10 to 17")
        expect(!error.description.isEmpty && !error.description.contains("\n"), "an error description is not one line")
    }
}
