import Basics
import Testing
import WebAuthnClient

/// Options as server libraries write them, typed in from their documented output shapes, and every way to get them
/// wrong.
struct OptionsTests {
    // py_webauthn 2.x `options_to_json(generate_registration_options(...))`: json.dumps spacing, its default
    // algorithm list, an empty excludeCredentials, preferred resident key, no wrapper.
    static let pyWebAuthnRegistration = #"""
        {"rp": {"name": "Example Co", "id": "example.com"}, "user": {"id": "Ym9iLTEyMw", "name": "bob", "displayName": "Bob"}, "challenge": "dGhpcy1pcy1hLWNoYWxsZW5nZS0zMi1ieXRlcyE", "pubKeyCredParams": [{"type": "public-key", "alg": -7}, {"type": "public-key", "alg": -8}, {"type": "public-key", "alg": -36}, {"type": "public-key", "alg": -37}, {"type": "public-key", "alg": -38}, {"type": "public-key", "alg": -39}, {"type": "public-key", "alg": -257}, {"type": "public-key", "alg": -258}, {"type": "public-key", "alg": -259}], "timeout": 60000, "excludeCredentials": [{"id": "AQIDBAUGBwg", "type": "public-key", "transports": ["internal", "hybrid"]}], "authenticatorSelection": {"residentKey": "preferred", "requireResidentKey": false, "userVerification": "preferred"}, "attestation": "none", "hints": ["client-device"]}
        """#

    // py_webauthn 2.x `options_to_json(generate_authentication_options(...))`.
    static let pyWebAuthnAuthentication = #"""
        {"challenge": "cHktd2ViYXV0aG4tY2hhbGxlbmdl", "timeout": 60000, "rpId": "example.com", "allowCredentials": [{"id": "AQIDBAUGBwg", "type": "public-key", "transports": ["usb", "nfc"]}], "userVerification": "required"}
        """#

    // SimpleWebAuthn (v10+) `generateRegistrationOptions()`: its key order, an empty display name, credProps asked
    // for, an empty hints list.
    static let simpleWebAuthnRegistration = #"""
        {"challenge":"c2ltcGxld2ViYXV0aG4tY2hhbGxlbmdl","rp":{"name":"SimpleWebAuthn Example","id":"localhost"},"user":{"id":"dXNlci0xMjM0NQ","name":"user@localhost","displayName":""},"pubKeyCredParams":[{"alg":-8,"type":"public-key"},{"alg":-7,"type":"public-key"},{"alg":-257,"type":"public-key"}],"timeout":60000,"attestation":"none","excludeCredentials":[],"authenticatorSelection":{"residentKey":"preferred","userVerification":"preferred","requireResidentKey":false},"extensions":{"credProps":true},"hints":[]}
        """#

    // SimpleWebAuthn `generateAuthenticationOptions()`.
    static let simpleWebAuthnAuthentication = #"""
        {"rpId":"localhost","challenge":"c2ltcGxld2ViYXV0aG4tYXV0aA","allowCredentials":[{"id":"CQgHBgUEAwIB","type":"public-key","transports":["internal","hybrid","smart-card","made-up"]}],"timeout":60000,"userVerification":"preferred"}
        """#

    @Test func pyWebAuthnRegistrationOptions() throws {
        let options = try PublicKeyCredentialCreationOptions(json: Array(Self.pyWebAuthnRegistration.utf8))
        #expect(options.relyingParty == .init(id: "example.com", name: "Example Co"))
        #expect(options.user == .init(id: Array("bob-123".utf8), name: "bob", displayName: "Bob"))
        #expect(options.challenge == Array("this-is-a-challenge-32-bytes!".utf8))
        #expect(options.parameters.map(\.algorithm) == [-7, -8, -36, -37, -38, -39, -257, -258, -259])
        #expect(options.timeout == 60000)
        #expect(options.excludeCredentials == [.init(id: Array(1...8), transports: [.internal, .hybrid])])
        #expect(options.authenticatorSelection == .init(residentKey: .preferred, userVerification: .preferred))
        #expect(options.authenticatorSelection.effectiveResidentKey == .preferred)
        #expect(options.attestation == .none)
        #expect(options.hints == [.clientDevice])
        #expect(options.extensions == ClientExtensionInputs())
    }

    @Test func pyWebAuthnAuthenticationOptions() throws {
        let options = try PublicKeyCredentialRequestOptions(json: Array(Self.pyWebAuthnAuthentication.utf8))
        #expect(options.challenge == Array("py-webauthn-challenge".utf8))
        #expect(options.relyingPartyID == "example.com")
        #expect(options.allowCredentials == [.init(id: Array(1...8), transports: [.usb, .nfc])])
        #expect(options.userVerification == .required)
        #expect(options.timeout == 60000)
    }

    @Test func simpleWebAuthnRegistrationOptions() throws {
        let options = try PublicKeyCredentialCreationOptions(json: Array(Self.simpleWebAuthnRegistration.utf8))
        #expect(options.relyingParty.id == "localhost")
        #expect(options.user.displayName == "")
        #expect(options.parameters.map(\.algorithm) == [-8, -7, -257])
        #expect(options.extensions.credentialProperties)
        #expect(options.hints.isEmpty)
        #expect(options.excludeCredentials.isEmpty)
    }

    @Test func simpleWebAuthnAuthenticationOptionsDropUnknownTransports() throws {
        let options = try PublicKeyCredentialRequestOptions(json: Array(Self.simpleWebAuthnAuthentication.utf8))
        #expect(options.relyingPartyID == "localhost")
        #expect(
            options.allowCredentials == [
                .init(id: Array((1...9).reversed()), transports: [.internal, .hybrid, .smartCard])
            ])
        #expect(options.userVerification == .preferred)
    }

    @Test func defaultsFollowTheIDL() throws {
        let create = try PublicKeyCredentialCreationOptions(
            json: Array(
                #"{"rp":{"name":"E"},"user":{"id":"AQ","name":"a","displayName":"A"},"challenge":"","pubKeyCredParams":[]}"#
                    .utf8))
        #expect(create.relyingParty.id == nil)
        #expect(create.timeout == nil)
        #expect(create.parameters.isEmpty)
        #expect(create.authenticatorSelection == AuthenticatorSelectionCriteria())
        #expect(create.authenticatorSelection.effectiveResidentKey == .discouraged)
        #expect(create.attestation == .none)
        let get = try PublicKeyCredentialRequestOptions(json: Array(#"{"challenge":"AAAA"}"#.utf8))
        #expect(get.relyingPartyID == nil && get.allowCredentials.isEmpty && get.userVerification == .preferred)
    }

    @Test func requireResidentKeyAloneMeansRequired() throws {
        let options = try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(#""authenticatorSelection":{"requireResidentKey":true}"#))
        #expect(options.authenticatorSelection.effectiveResidentKey == .required)
    }

    /// WebAuthn §2.1.1: unknown values of DOMString enumerations read as if the member were absent.
    @Test func unknownEnumerationValuesAreIgnored() throws {
        let options = try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(
                #""authenticatorSelection":{"authenticatorAttachment":"glove","residentKey":"maybe","userVerification":"sometimes"},"attestation":"notarised","hints":["carrier-pigeon","hybrid","hybrid","security-key"],"extensions":{"unknownExtension":{"x":1},"credentialProtectionPolicy":"whenever"}"#
            ))
        #expect(options.authenticatorSelection == AuthenticatorSelectionCriteria())
        #expect(options.attestation == .none)
        #expect(options.hints == [.hybrid, .securityKey])
        #expect(options.extensions.credentialProtectionPolicy == nil)
    }

    @Test func wrappedOptionsAreUnwrapped() throws {
        let wrapped = #"{"publicKey":{"challenge":"AAECAw","rpId":"example.com"},"mediation":"conditional"}"#
        let options = try PublicKeyCredentialRequestOptions(json: Array(wrapped.utf8))
        #expect(options.challenge == [0, 1, 2, 3])
        #expect(options.wrapperMediation == "conditional")
        let create = try PublicKeyCredentialCreationOptions(
            json: Array(#"{"publicKey":"#.utf8) + creationOptionsJSON() + Array("}".utf8))
        #expect(create.user.name == "alice")
    }

    @Test func nullCountsAsAbsent() throws {
        let options = try PublicKeyCredentialRequestOptions(
            json: Array(
                #"{"challenge":"AAAA","rpId":null,"timeout":null,"allowCredentials":null,"extensions":null}"#.utf8))
        #expect(options.relyingPartyID == nil && options.timeout == nil && options.allowCredentials.isEmpty)
    }

    @Test func extensionsAreRead() throws {
        let options = try PublicKeyCredentialRequestOptions(
            json: requestOptionsJSON(
                #""extensions":{"prf":{"eval":{"first":"AQID","second":"BAUG"},"evalByCredential":{"AQIDBAUGBwg":{"first":"Bw"}}},"getCredBlob":true,"largeBlob":{"read":true}}"#
            ))
        #expect(options.extensions.prf?.eval == PRFValues(first: [1, 2, 3], second: [4, 5, 6]))
        #expect(options.extensions.prf?.evalByCredential == ["AQIDBAUGBwg": PRFValues(first: [7])])
        #expect(options.extensions.getCredentialBlob)
        #expect(options.extensions.largeBlob?.read == true)
        let create = try PublicKeyCredentialCreationOptions(
            json: creationOptionsJSON(
                #""extensions":{"credentialProtectionPolicy":"userVerificationRequired","enforceCredentialProtectionPolicy":true,"minPinLength":true,"credBlob":"AQI","largeBlob":{"support":"required"},"prf":{}}"#
            ))
        #expect(create.extensions.credentialProtectionPolicy == .userVerificationRequired)
        #expect(create.extensions.enforceCredentialProtectionPolicy)
        #expect(create.extensions.minimumPINLength)
        #expect(create.extensions.credentialBlob == [1, 2])
        #expect(create.extensions.largeBlob?.supportRequired == true)
        #expect(create.extensions.prf == PRFInputs())
    }

    /// Every bad input: the error's name and the path it names.
    static let refusals: [(json: String, name: DOMExceptionName, reason: ClientError.Reason)] = [
        ("", .syntaxError, .malformedJSON(offset: 0, expected: "a value")),
        ("{", .syntaxError, .malformedJSON(offset: 1, expected: "a member name")),
        (#"{"challenge":"AAAA"} x"#, .syntaxError, .malformedJSON(offset: 21, expected: "the end of the text")),
        ("\u{FEFF}{}", .syntaxError, .malformedJSON(offset: 0, expected: "a value")),
        (#"[]"#, .typeError, .wrongType("the options", expected: "an object")),
        (#"{}"#, .typeError, .missingMember("challenge")),
        (#"{"challenge":null}"#, .typeError, .missingMember("challenge")),
        (#"{"challenge":5}"#, .typeError, .wrongType("challenge", expected: "a string")),
        (#"{"challenge":"AA+/"}"#, .encodingError, .notBase64URL("challenge")),
        (#"{"challenge":"A"}"#, .encodingError, .notBase64URL("challenge")),
        (
            #"{"challenge":"AAAA","timeout":-1}"#, .typeError,
            .outOfBounds("timeout", "not an integer from 0 to 4294967295")
        ),
        (#"{"challenge":"AAAA","timeout":"60000"}"#, .typeError, .wrongType("timeout", expected: "a number")),
        (#"{"challenge":"AAAA","rpId":7}"#, .typeError, .wrongType("rpId", expected: "a string")),
        (
            #"{"challenge":"AAAA","allowCredentials":{}}"#, .typeError,
            .wrongType("allowCredentials", expected: "an array")
        ),
        (
            #"{"challenge":"AAAA","allowCredentials":[{"type":"public-key"}]}"#, .typeError,
            .missingMember("allowCredentials[0].id")
        ),
        (
            #"{"challenge":"AAAA","allowCredentials":[{"id":"AAAA"}]}"#, .typeError,
            .missingMember("allowCredentials[0].type")
        ),
        (
            #"{"challenge":"AAAA","allowCredentials":[{"id":"","type":"public-key"}]}"#, .typeError,
            .outOfBounds("allowCredentials[0].id", "0 bytes; 1 to 1023 are allowed")
        ),
        (
            #"{"challenge":"AAAA","allowCredentials":[{"id":"AAAA","type":"public-key","transports":"usb"}]}"#,
            .typeError,
            .wrongType("allowCredentials[0].transports", expected: "an array")
        ),
        (
            #"{"challenge":"AAAA","userVerification":true}"#, .typeError,
            .wrongType("userVerification", expected: "a string")
        ),
        (#"{"challenge":"AAAA","extensions":[]}"#, .typeError, .wrongType("extensions", expected: "an object")),
        (
            #"{"challenge":"AAAA","extensions":{"prf":{"eval":{}}}}"#, .typeError,
            .missingMember("extensions.prf.eval.first")
        ),
        (
            #"{"challenge":"AAAA","extensions":{"prf":{"eval":{"first":"*"}}}}"#, .encodingError,
            .notBase64URL("extensions.prf.eval.first")
        ),
        (
            #"{"challenge":"AAAA","extensions":{"credProps":"yes"}}"#, .typeError,
            .wrongType("extensions.credProps", expected: "a boolean")
        ),
        (#"{"publicKey":[]}"#, .typeError, .wrongType("publicKey", expected: "an object")),
    ]

    @Test(arguments: refusals)
    func requestOptionsRefusals(json: String, name: DOMExceptionName, reason: ClientError.Reason) {
        #expect(throws: ClientError(reason)) { try PublicKeyCredentialRequestOptions(json: Array(json.utf8)) }
        #expect(ClientError(reason).name == name)
    }

    static let creationRefusals: [(json: String, reason: ClientError.Reason)] = [
        (
            #"{"user":{"id":"AQ","name":"a","displayName":"a"},"challenge":"","pubKeyCredParams":[]}"#,
            .missingMember("rp")
        ),
        (
            #"{"rp":{},"user":{"id":"AQ","name":"a","displayName":"a"},"challenge":"","pubKeyCredParams":[]}"#,
            .missingMember("rp.name")
        ),
        (
            #"{"rp":{"name":"E"},"user":{"id":"","name":"a","displayName":"a"},"challenge":"","pubKeyCredParams":[]}"#,
            .outOfBounds("user.id", "0 bytes; 1 to 64 are allowed")
        ),
        (
            #"{"rp":{"name":"E"},"user":{"id":"\#([UInt8](repeating: 1, count: 65).base64URLEncodedString)","name":"a","displayName":"a"},"challenge":"","pubKeyCredParams":[]}"#,
            .outOfBounds("user.id", "65 bytes; 1 to 64 are allowed")
        ),
        (
            #"{"rp":{"name":"E"},"user":{"id":"AQ","name":"a"},"challenge":"","pubKeyCredParams":[]}"#,
            .missingMember("user.displayName")
        ),
        (
            #"{"rp":{"name":"E"},"user":{"id":"AQ","name":"a","displayName":"a"},"challenge":""}"#,
            .missingMember("pubKeyCredParams")
        ),
        (
            #"{"rp":{"name":"E"},"user":{"id":"AQ","name":"a","displayName":"a"},"challenge":"","pubKeyCredParams":[{"type":"public-key","alg":"-7"}]}"#,
            .wrongType("pubKeyCredParams[0].alg", expected: "a number")
        ),
        (
            #"{"rp":{"name":"E"},"user":{"id":"AQ","name":"a","displayName":"a"},"challenge":"","pubKeyCredParams":[{"type":"public-key","alg":3000000000}]}"#,
            .outOfBounds("pubKeyCredParams[0].alg", "not an integer from -2147483648 to 2147483647")
        ),
        (
            #"{"rp":{"name":"E"},"user":{"id":"AQ","name":"a","displayName":"a"},"challenge":"\#([UInt8](repeating: 0, count: 1025).base64URLEncodedString)","pubKeyCredParams":[]}"#,
            .outOfBounds("challenge", "1025 bytes; 0 to 1024 are allowed")
        ),
        (
            #"{"rp":{"name":"E"},"user":{"id":"AQ","name":"a","displayName":"a"},"challenge":"","pubKeyCredParams":[],"authenticatorSelection":"platform"}"#,
            .wrongType("authenticatorSelection", expected: "an object")
        ),
        (
            #"{"rp":{"name":"\#(String(repeating: "n", count: 1025))"},"user":{"id":"AQ","name":"a","displayName":"a"},"challenge":"","pubKeyCredParams":[]}"#,
            .outOfBounds("rp.name", "longer than 1024 bytes")
        ),
    ]

    @Test(arguments: creationRefusals)
    func creationOptionsRefusals(json: String, reason: ClientError.Reason) {
        #expect(throws: ClientError(reason)) { try PublicKeyCredentialCreationOptions(json: Array(json.utf8)) }
    }

    @Test func listsAreBounded() {
        let descriptors = Array(repeating: #"{"type":"public-key","id":"AQ"}"#, count: 65).joined(separator: ",")
        #expect(throws: ClientError(.outOfBounds("allowCredentials", "more than 64 entries"))) {
            try PublicKeyCredentialRequestOptions(json: requestOptionsJSON(#""allowCredentials":[\#(descriptors)]"#))
        }
    }

    @Test func inputOverOneMebibyteIsRefusedBeforeParsing() {
        let json = Array(repeating: UInt8(ascii: " "), count: (1 << 20) + 1)
        #expect(throws: ClientError(.inputTooLarge(bytes: (1 << 20) + 1, limit: 1 << 20))) {
            try PublicKeyCredentialRequestOptions(json: json)
        }
    }

    @Test func aReasonStaysOneLineWhateverTheOptionsHold() {
        let json = requestOptionsJSON(#""extensions":{"prf":{"evalByCredential":{"a\nb\u2028":{"first":7}}}}"#)
        #expect {
            try PublicKeyCredentialRequestOptions(json: json)
        } throws: { error in
            let description = (error as? ClientError)?.description ?? ""
            return description
                == #"TypeError: extensions.prf.evalByCredential.a\u{a}b\u{2028}.first must be a string"#
        }
    }

    @Test func errorsCarryDistinctExitStatuses() {
        let statuses = DOMExceptionName.allCases.map(\.exitStatus)
        #expect(Set(statuses).count == statuses.count)
        #expect(statuses.allSatisfy { (10...17).contains($0) })
        #expect(ClientError(.missingMember("challenge")).description == "TypeError: challenge is required")
    }
}
