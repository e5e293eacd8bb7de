import CBOR

/// Writing requests, the mirror of `init(cbor:)`: a platform builds a request value and sends `message`, and
/// `init(cbor:)` of the bytes after the command byte gives the same value back.
extension MakeCredentialRequest {
    /// A request from its parts; empty lists, an empty options map and absent values are left out of the message.
    public init(
        clientDataHash: [UInt8], relyingPartyID: String, relyingPartyName: String?, userHandle: [UInt8],
        userName: String?, userDisplayName: String?, algorithms: [Int], excludeList: [CredentialDescriptor] = [],
        extensions: CBORValue? = nil, options: [String: Bool] = [:], pinUvAuthParam: [UInt8]? = nil,
        pinUvAuthProtocol: Int? = nil, enterpriseAttestation: Int? = nil
    ) {
        self.clientDataHash = clientDataHash
        self.relyingPartyID = relyingPartyID
        self.relyingPartyName = relyingPartyName
        self.userHandle = userHandle
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.algorithms = algorithms
        self.excludeList = excludeList
        self.extensions = extensions
        self.options = options
        self.pinUvAuthParam = pinUvAuthParam
        self.pinUvAuthProtocol = pinUvAuthProtocol
        self.enterpriseAttestation = enterpriseAttestation
    }

    /// The parameters map (CTAP 2.1 §6.1), canonical.
    public var cborRepresentation: CBORValue {
        var rp: [CBORValue: CBORValue] = ["id": .text(relyingPartyID)]
        if let relyingPartyName { rp["name"] = .text(relyingPartyName) }
        var user: [CBORValue: CBORValue] = ["id": .bytes(userHandle)]
        if let userName { user["name"] = .text(userName) }
        if let userDisplayName { user["displayName"] = .text(userDisplayName) }
        var parameters: [CBORValue: CBORValue] = [
            1: .bytes(clientDataHash), 2: .map(rp), 3: .map(user),
            4: .array(algorithms.map { ["alg": .int($0), "type": "public-key"] }),
        ]
        if !excludeList.isEmpty { parameters[5] = .array(excludeList.map(\.cborRepresentation)) }
        if let extensions { parameters[6] = extensions }
        if !options.isEmpty {
            parameters[7] = .map(Dictionary(uniqueKeysWithValues: options.map { (.text($0), .bool($1)) }))
        }
        if let pinUvAuthParam { parameters[8] = .bytes(pinUvAuthParam) }
        if let pinUvAuthProtocol { parameters[9] = .int(pinUvAuthProtocol) }
        if let enterpriseAttestation { parameters[10] = .int(enterpriseAttestation) }
        return .map(parameters)
    }

    /// The command byte followed by the parameters.
    public var message: [UInt8] { [CTAPCommand.makeCredential.rawValue] + cborRepresentation.encoded() }
}

extension GetAssertionRequest {
    /// A request from its parts; empty lists, an empty options map and absent values are left out of the message.
    public init(
        relyingPartyID: String, clientDataHash: [UInt8], allowList: [CredentialDescriptor] = [],
        extensions: CBORValue? = nil, options: [String: Bool] = [:], pinUvAuthParam: [UInt8]? = nil,
        pinUvAuthProtocol: Int? = nil
    ) {
        self.relyingPartyID = relyingPartyID
        self.clientDataHash = clientDataHash
        self.allowList = allowList
        self.extensions = extensions
        self.options = options
        self.pinUvAuthParam = pinUvAuthParam
        self.pinUvAuthProtocol = pinUvAuthProtocol
    }

    /// The parameters map (CTAP 2.1 §6.2), canonical.
    public var cborRepresentation: CBORValue {
        var parameters: [CBORValue: CBORValue] = [1: .text(relyingPartyID), 2: .bytes(clientDataHash)]
        if !allowList.isEmpty { parameters[3] = .array(allowList.map(\.cborRepresentation)) }
        if let extensions { parameters[4] = extensions }
        if !options.isEmpty {
            parameters[5] = .map(Dictionary(uniqueKeysWithValues: options.map { (.text($0), .bool($1)) }))
        }
        if let pinUvAuthParam { parameters[6] = .bytes(pinUvAuthParam) }
        if let pinUvAuthProtocol { parameters[7] = .int(pinUvAuthProtocol) }
        return .map(parameters)
    }

    /// The command byte followed by the parameters.
    public var message: [UInt8] { [CTAPCommand.getAssertion.rawValue] + cborRepresentation.encoded() }
}

extension CTAPClient {
    /// authenticatorGetNextAssertion: the command byte alone.
    public static let getNextAssertionMessage: [UInt8] = [CTAPCommand.getNextAssertion.rawValue]

    /// authenticatorGetInfo: the command byte alone.
    public static let getInfoMessage: [UInt8] = [CTAPCommand.getInfo.rawValue]

    /// The authenticator's key agreement key (key 1) from a getKeyAgreement answer.
    public static func keyAgreementKey(fromResponse response: [UInt8]) throws(CTAPError) -> CBORValue {
        try body(of: response, decoder: CBORDecoder(requiresCanonicalForm: false)).parameters().required(1)
    }
}
