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
    public static let selection = CTAPCommand(rawValue: 0x0B)
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
