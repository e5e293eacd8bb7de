import Basics
import CTAP2
import JSON
import WebAuthn

/// The client extension inputs this client processes (`AuthenticationExtensionsClientInputsJSON`); every other
/// extension is ignored, as a browser ignores extensions it does not support (WebAuthn L3 §5.1.3 step 12,
/// §5.1.4.1 step 9). A known extension with a value of the wrong type is a `TypeError`.
public struct ClientExtensionInputs: Hashable, Sendable {
    /// `credProps` (§10.1.3): report whether the new credential is discoverable.
    public var credentialProperties = false
    /// `prf` (§10.1.4), on CTAP2's hmac-secret.
    public var prf: PRFInputs?
    /// `largeBlob` (§10.1.5).
    public var largeBlob: LargeBlobInputs?
    /// `credentialProtectionPolicy` (CTAP 2.1 §12.1 credProtect); unknown policies are ignored.
    public var credentialProtectionPolicy: CredentialProtectionPolicy?
    /// `enforceCredentialProtectionPolicy`: only authenticators that support credProtect may answer.
    public var enforceCredentialProtectionPolicy = false
    /// `minPinLength` (CTAP 2.1 §12.4): ask the authenticator to report its minimum PIN length to this RP.
    public var minimumPINLength = false
    /// `credBlob` (CTAP 2.1 §12.2): bytes to store with a new credential.
    public var credentialBlob: [UInt8]?
    /// `getCredBlob` (CTAP 2.1 §12.2): return the stored credBlob with an assertion.
    public var getCredentialBlob = false

    public init() {}

    /// The longest `credBlob` accepted from the options; authenticators keep at most their getInfo maxCredBlobLength.
    static let maximumCredentialBlobBytes = 1024
    /// The longest PRF input accepted (each of `first` and `second`).
    static let maximumPRFInputBytes = 1024
    /// The most `evalByCredential` entries, as many as `allowCredentials` may hold.
    static let maximumPRFCredentials = 64

    init(_ dictionary: JSONDictionary?) throws(ClientError) {
        guard let dictionary else { return }
        credentialProperties = try dictionary.bool("credProps") ?? false
        if let prf = try dictionary.dictionary("prf") { self.prf = try PRFInputs(prf) }
        if let largeBlob = try dictionary.dictionary("largeBlob") { self.largeBlob = try LargeBlobInputs(largeBlob) }
        credentialProtectionPolicy = try dictionary.string("credentialProtectionPolicy").flatMap(
            CredentialProtectionPolicy.init(rawValue:))
        enforceCredentialProtectionPolicy = try dictionary.bool("enforceCredentialProtectionPolicy") ?? false
        minimumPINLength = try dictionary.bool("minPinLength") ?? false
        credentialBlob = try dictionary.bytes("credBlob", count: 0...Self.maximumCredentialBlobBytes)
        getCredentialBlob = try dictionary.bool("getCredBlob") ?? false
    }
}

/// `credentialProtectionPolicy` values and the credProtect levels they ask for (CTAP 2.1 §12.1).
public enum CredentialProtectionPolicy: String, Hashable, Sendable, CaseIterable {
    case userVerificationOptional
    case userVerificationOptionalWithCredentialIDList
    case userVerificationRequired

    /// The CTAP2 `credProtect` value.
    var level: Int {
        switch self {
        case .userVerificationOptional: 1
        case .userVerificationOptionalWithCredentialIDList: 2
        case .userVerificationRequired: 3
        }
    }
}

/// `AuthenticationExtensionsPRFValues`: one or two PRF inputs, or outputs.
public struct PRFValues: Hashable, Sendable {
    public var first: [UInt8]
    public var second: [UInt8]?

    public init(first: [UInt8], second: [UInt8]? = nil) {
        self.first = first
        self.second = second
    }

    init(_ dictionary: JSONDictionary) throws(ClientError) {
        let bounds = 0...ClientExtensionInputs.maximumPRFInputBytes
        first = try dictionary.requiredBytes("first", count: bounds)
        second = try dictionary.bytes("second", count: bounds)
    }

    var jsonValue: JSONValue {
        var members = [JSONMember("first", .string(first.base64URLEncodedString))]
        if let second { members.append(JSONMember("second", .string(second.base64URLEncodedString))) }
        return .object(members)
    }
}

/// `AuthenticationExtensionsPRFInputs`.
public struct PRFInputs: Hashable, Sendable {
    public var eval: PRFValues?
    /// Keyed by base64url credential ID, exactly as the options wrote it; checked against `allowCredentials` when a
    /// request starts (§10.1.4, authentication step 2).
    public var evalByCredential: [String: PRFValues]

    public init(eval: PRFValues? = nil, evalByCredential: [String: PRFValues] = [:]) {
        self.eval = eval
        self.evalByCredential = evalByCredential
    }

    init(_ dictionary: JSONDictionary) throws(ClientError) {
        eval = try dictionary.dictionary("eval").map { (eval) throws(ClientError) in try PRFValues(eval) }
        evalByCredential = [:]
        if let record = try dictionary.dictionary("evalByCredential") {
            guard record.members.count <= ClientExtensionInputs.maximumPRFCredentials else {
                throw ClientError(
                    .outOfBounds(
                        String(record.path.dropLast()),
                        "more than \(ClientExtensionInputs.maximumPRFCredentials) entries"))
            }
            for member in record.members where member.value != .null {
                evalByCredential[member.key] = try PRFValues(
                    JSONDictionary(member.value, path: record.name(member.key) + "."))
            }
        }
    }
}

/// `AuthenticationExtensionsLargeBlobInputs`.
public struct LargeBlobInputs: Hashable, Sendable {
    /// `support` at registration: `required` or `preferred` (the default; unknown values read as absent).
    public var supportRequired: Bool
    /// Whether `support` was present at all (refused at authentication).
    public var hasSupport: Bool
    /// `read` at authentication.
    public var read: Bool?
    /// `write` at authentication.
    public var write: [UInt8]?

    public init(supportRequired: Bool = false, hasSupport: Bool = false, read: Bool? = nil, write: [UInt8]? = nil) {
        self.supportRequired = supportRequired
        self.hasSupport = hasSupport
        self.read = read
        self.write = write
    }

    init(_ dictionary: JSONDictionary) throws(ClientError) {
        let support = try dictionary.string("support")
        hasSupport = support != nil
        supportRequired = support == "required"
        read = try dictionary.bool("read")
        write = try dictionary.bytes("write", count: 0...JSONValue.Limits().maximumBytes)
    }
}

/// `AuthenticationExtensionsPRFOutputs`.
public struct PRFOutputs: Hashable, Sendable {
    /// Registration only: whether the new credential supports the PRF.
    public var enabled: Bool?
    /// The PRF evaluated at the inputs, when the authenticator did.
    public var results: PRFValues?

    public init(enabled: Bool? = nil, results: PRFValues? = nil) {
        self.enabled = enabled
        self.results = results
    }
}

/// The client extension outputs (`AuthenticationExtensionsClientOutputsJSON`) a response carries.
public struct ClientExtensionOutputs: Hashable, Sendable {
    /// `credProps.rk`: whether the new credential is discoverable.
    public var credentialProperties: Bool?
    /// `prf`: present (maybe empty) whenever prf was asked for (§10.1.4: "Initialize the prf extension output to an
    /// empty dictionary").
    public var prf: PRFOutputs?
    /// `largeBlob.supported` (registration only).
    public var largeBlobSupported: Bool?
    /// `credBlob`: whether the authenticator stored it.
    public var credentialBlobStored: Bool?
    /// `getCredBlob`: the blob stored with the credential (empty when none).
    public var credentialBlob: [UInt8]?

    public init() {}

    /// The JSON object, members in a fixed order: credProps, prf, largeBlob, credBlob, getCredBlob.
    public var jsonValue: JSONValue {
        var members: [JSONMember] = []
        if let credentialProperties {
            members.append(JSONMember("credProps", .object([JSONMember("rk", .bool(credentialProperties))])))
        }
        if let prf {
            var outputs: [JSONMember] = []
            if let enabled = prf.enabled { outputs.append(JSONMember("enabled", .bool(enabled))) }
            if let results = prf.results { outputs.append(JSONMember("results", results.jsonValue)) }
            members.append(JSONMember("prf", .object(outputs)))
        }
        if let largeBlobSupported {
            members.append(JSONMember("largeBlob", .object([JSONMember("supported", .bool(largeBlobSupported))])))
        }
        if let credentialBlobStored { members.append(JSONMember("credBlob", .bool(credentialBlobStored))) }
        if let credentialBlob {
            members.append(JSONMember("getCredBlob", .string(credentialBlob.base64URLEncodedString)))
        }
        return .object(members)
    }
}

extension PRFEvaluation {
    /// The prf results in the authenticator data, as the client returns them; nil when it has none, and an invalid
    /// response when they do not decrypt.
    func prfValues(from authenticatorData: AuthenticatorData) throws(ClientError) -> PRFValues? {
        let results: [[UInt8]]?
        do {
            results = try self.results(from: authenticatorData)
        } catch {
            throw ClientError(.invalidResponse("the \(extensionName) output could not be decrypted"))
        }
        guard let results else { return nil }
        return PRFValues(first: results[0], second: results.count > 1 ? results[1] : nil)
    }
}
