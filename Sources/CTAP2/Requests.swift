import CBOR

/// The CTAP2 command bytes this authenticator answers (CTAP 2.1 §6).
public struct CTAPCommand: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let makeCredential = CTAPCommand(rawValue: 0x01)
    public static let getAssertion = CTAPCommand(rawValue: 0x02)
    public static let getInfo = CTAPCommand(rawValue: 0x04)
    public static let reset = CTAPCommand(rawValue: 0x07)
    public static let getNextAssertion = CTAPCommand(rawValue: 0x08)
    public static let clientPIN = CTAPCommand(rawValue: 0x06)
    public static let credentialManagement = CTAPCommand(rawValue: 0x0A)
    /// authenticatorCredentialManagement under its prototype number (FIDO_2_1_PRE credentialMgmtPreview), which
    /// libfido2 before 1.13 sends for every credential management request. Answered as `credentialManagement`.
    public static let credentialManagementPreview = CTAPCommand(rawValue: 0x41)
    public static let selection = CTAPCommand(rawValue: 0x0B)
    public static let largeBlobs = CTAPCommand(rawValue: 0x0C)
    public static let config = CTAPCommand(rawValue: 0x0D)
}

/// A `PublicKeyCredentialDescriptor` from an allowList or excludeList.
public struct CredentialDescriptor: Hashable, Sendable {
    public var type: String
    public var id: [UInt8]

    public init(type: String = "public-key", id: [UInt8]) {
        self.type = type
        self.id = id
    }

    init(cbor: CBORValue) throws(CTAPError) {
        let map = try cbor.parameters()
        type = try map.required("type").text()
        id = try map.required("id").bytes()
        _ = try map.optional("transports")?.array()
    }

    var cborRepresentation: CBORValue { ["type": .text(type), "id": .bytes(id)] }
}

/// The options map shared by makeCredential and getAssertion: text keys, boolean values.
struct RequestOptions {
    var values: [String: Bool] = [:]

    init(cbor: CBORValue?) throws(CTAPError) {
        guard let cbor else { return }
        let map = try cbor.parameters()
        for (key, value) in map.entries {
            // Options are text keys with boolean values; anything else is the wrong type.
            values[try key.text()] = try value.bool()
        }
    }

    subscript(name: String) -> Bool? { values[name] }
}

/// authenticatorMakeCredential parameters (CTAP 2.1 §6.1).
public struct MakeCredentialRequest: Sendable {
    public var clientDataHash: [UInt8]
    public var relyingPartyID: String
    public var relyingPartyName: String?
    public var userHandle: [UInt8]
    public var userName: String?
    public var userDisplayName: String?
    /// The algorithms the relying party accepts, in its order of preference; unknown types are dropped.
    public var algorithms: [Int]
    public var excludeList: [CredentialDescriptor]
    public var extensions: CBORValue?
    public var options: [String: Bool]
    public var pinUvAuthParam: [UInt8]?
    public var pinUvAuthProtocol: Int?
    public var enterpriseAttestation: Int?

    public init(cbor: CBORValue) throws(CTAPError) {
        let map = try cbor.parameters()
        clientDataHash = try map.required(1).bytes()
        let rp = try map.required(2).parameters()
        relyingPartyID = try rp.required("id").text()
        relyingPartyName = try rp.optional("name")?.text()
        let user = try map.required(3).parameters()
        userHandle = try user.required("id").bytes()
        userName = try user.optional("name")?.text()
        userDisplayName = try user.optional("displayName")?.text()
        var algorithms: [Int] = []
        for parameter in try map.required(4).array() {
            let entry = try parameter.parameters()
            let algorithm = try entry.required("alg").int()
            if try entry.required("type").text() == "public-key" { algorithms.append(algorithm) }
        }
        self.algorithms = algorithms
        excludeList = try (map.optional(5)?.array() ?? []).map { element throws(CTAPError) in
            try CredentialDescriptor(cbor: element)
        }
        extensions = map.optional(6)
        if let extensions, extensions.mapValue == nil { throw .cborUnexpectedType }
        options = try RequestOptions(cbor: map.optional(7)).values
        pinUvAuthParam = try map.optional(8)?.bytes()
        pinUvAuthProtocol = try map.optional(9)?.int()
        enterpriseAttestation = try map.optional(10)?.int()
    }
}

/// authenticatorGetAssertion parameters (CTAP 2.1 §6.2).
public struct GetAssertionRequest: Sendable {
    public var relyingPartyID: String
    public var clientDataHash: [UInt8]
    public var allowList: [CredentialDescriptor]
    public var extensions: CBORValue?
    public var options: [String: Bool]
    public var pinUvAuthParam: [UInt8]?
    public var pinUvAuthProtocol: Int?

    public init(cbor: CBORValue) throws(CTAPError) {
        let map = try cbor.parameters()
        relyingPartyID = try map.required(1).text()
        clientDataHash = try map.required(2).bytes()
        allowList = try (map.optional(3)?.array() ?? []).map { element throws(CTAPError) in
            try CredentialDescriptor(cbor: element)
        }
        extensions = map.optional(4)
        if let extensions, extensions.mapValue == nil { throw .cborUnexpectedType }
        options = try RequestOptions(cbor: map.optional(5)).values
        pinUvAuthParam = try map.optional(6)?.bytes()
        pinUvAuthProtocol = try map.optional(7)?.int()
    }
}

/// authenticatorClientPIN parameters (CTAP 2.1 §6.5.5). Which are required depends on the subcommand.
struct ClientPINRequest {
    /// The subcommands this authenticator answers.
    enum Subcommand: Int {
        case getPINRetries = 0x01
        case getKeyAgreement = 0x02
        case setPIN = 0x03
        case changePIN = 0x04
        case getPINToken = 0x05
        case getPinUvAuthTokenUsingUvWithPermissions = 0x06
        case getUVRetries = 0x07
        case getPinUvAuthTokenUsingPinWithPermissions = 0x09
    }

    var pinUvAuthProtocol: Int?
    var subcommand: Int
    var keyAgreement: CBORValue?
    var pinUvAuthParam: [UInt8]?
    var newPinEnc: [UInt8]?
    var pinHashEnc: [UInt8]?
    var permissions: Int?
    var relyingPartyID: String?

    init(cbor: CBORValue) throws(CTAPError) {
        let map = try cbor.parameters()
        pinUvAuthProtocol = try map.optional(1)?.int()
        subcommand = try map.required(2).int()
        keyAgreement = map.optional(3)
        if let keyAgreement, keyAgreement.mapValue == nil { throw .cborUnexpectedType }
        pinUvAuthParam = try map.optional(4)?.bytes()
        newPinEnc = try map.optional(5)?.bytes()
        pinHashEnc = try map.optional(6)?.bytes()
        permissions = try map.optional(9)?.int()
        relyingPartyID = try map.optional(0x0A)?.text()
    }
}

/// The shape shared by authenticatorCredentialManagement (CTAP 2.1 §6.8) and authenticatorConfig (§6.11):
/// a subcommand, its parameters, and a pinUvAuthParam over them.
struct SubcommandRequest {
    var subcommand: Int
    var parameters: CBORValue?
    var pinUvAuthProtocol: Int?
    var pinUvAuthParam: [UInt8]?

    init(cbor: CBORValue) throws(CTAPError) {
        let map = try cbor.parameters()
        subcommand = try map.required(1).int()
        parameters = map.optional(2)
        if let parameters, parameters.mapValue == nil { throw .cborUnexpectedType }
        pinUvAuthProtocol = try map.optional(3)?.int()
        pinUvAuthParam = try map.optional(4)?.bytes()
    }

    /// `subCommand ‖ subCommandParams`: the CBOR the platform sent, which the strict decoder guarantees is
    /// canonical, so encoding it again gives the same bytes.
    var authenticatedBytes: [UInt8] {
        [UInt8(truncatingIfNeeded: subcommand)] + (parameters?.encoded() ?? [])
    }
}
