import CBOR
import CTAP2

/// A makeCredential or getAssertion request, read far enough to decide how the user is verified and to add a
/// pinUvAuthParam. Everything else in it is kept as it came.
struct VerifiableRequest: Sendable {
    /// makeCredential or getAssertion.
    let command: CTAPCommand
    private(set) var parameters: [CBORValue: CBORValue]
    let relyingPartyID: String
    let clientDataHash: [UInt8]

    /// The parameter keys of the options map, the pinUvAuthParam and its protocol: 7, 8, 9 for makeCredential and
    /// 5, 6, 7 for getAssertion (CTAP 2.1 §6.1, §6.2).
    private var keys: (options: CBORValue, param: CBORValue, protocol: CBORValue) {
        command == .makeCredential ? (7, 8, 9) : (5, 6, 7)
    }

    /// Reads a CTAP message; `nil` when it is not a makeCredential or getAssertion this code can read, which is then
    /// sent as it is and answered by the key.
    init?(message: [UInt8]) {
        guard let first = message.first else { return nil }
        let command = CTAPCommand(rawValue: first)
        guard command == .makeCredential || command == .getAssertion,
            let value = try? CBORDecoder(requiresCanonicalForm: false).decode(message.dropFirst()),
            let parameters = value.mapValue
        else { return nil }
        let relyingPartyID =
            command == .makeCredential ? parameters[2]?.mapValue?["id"]?.textValue : parameters[1]?.textValue
        let clientDataHash = command == .makeCredential ? parameters[1]?.bytesValue : parameters[2]?.bytesValue
        guard let relyingPartyID, let clientDataHash else { return nil }
        self.command = command
        self.parameters = parameters
        self.relyingPartyID = relyingPartyID
        self.clientDataHash = clientDataHash
    }

    /// The options the request sets (`rk`, `up`, `uv`); options of other types are left out.
    var options: [String: Bool] {
        var options: [String: Bool] = [:]
        for (key, value) in parameters[keys.options]?.mapValue ?? [:] {
            if let name = key.textValue, let enabled = value.boolValue { options[name] = enabled }
        }
        return options
    }

    /// Whether the caller already signed the request (or sent the zero-length probe some platforms use).
    var hasPinUvAuthParam: Bool { parameters[keys.param] != nil }

    /// The permission a token for this request needs.
    var permission: PinUvAuthPermissions { command == .makeCredential ? .makeCredential : .getAssertion }

    /// The message with a pinUvAuthParam over the clientDataHash signed with `token`, and without the `uv` option (a
    /// token is the verification; keys without built-in verification refuse `uv`).
    func signed(with token: PinUvAuthToken) -> [UInt8] {
        var parameters = self.parameters
        parameters[keys.param] = .bytes(token.authenticate(clientDataHash))
        parameters[keys.protocol] = .int(token.pinUvAuthProtocol.rawValue)
        if var options = parameters[keys.options]?.mapValue {
            options["uv"] = nil
            parameters[keys.options] = options.isEmpty ? nil : .map(options)
        }
        return [command.rawValue] + CBORValue.map(parameters).encoded()
    }

    /// The message asking the key to verify the user itself (`uv: true`).
    func withBuiltInUserVerification() -> [UInt8] {
        var parameters = self.parameters
        var options = parameters[keys.options]?.mapValue ?? [:]
        options["uv"] = true
        parameters[keys.options] = .map(options)
        return [command.rawValue] + CBORValue.map(parameters).encoded()
    }
}

/// How a request is sent, given what the key said in getInfo: the decision, without I/O.
enum UserVerificationPlan: Equatable, Sendable {
    /// Send the request as it is.
    case asIs
    /// Get a pinUvAuthToken with the PIN first, and sign the request with it.
    case pinToken
    /// The request cannot succeed with this key.
    case impossible(SecurityKeyError)

    /// Before sending (CTAP 2.1 §6.1.2, §6.2.2, and CTAP 2.0 §5.1 for keys that know no `makeCredUvNotRqd`):
    /// - a request the caller signed, or one this code cannot read, goes as it is;
    /// - `uv: true` is verification the caller requires: built-in verification when the key has it, else the PIN,
    ///   else it cannot be done (``SecurityKeyError/pinNotSet`` when the key could have a PIN);
    /// - without `uv`, a key with a PIN set and no built-in verification needs a token for everything when it says
    ///   `alwaysUv`, and for makeCredential when the credential is discoverable or the key does not say
    ///   `makeCredUvNotRqd` (a CTAP 2.0 key wants the PIN for every makeCredential once one is set).
    static func before(_ request: VerifiableRequest?, info: AuthenticatorInfo) -> UserVerificationPlan {
        guard let request, !request.hasPinUvAuthParam else { return .asIs }
        let options = request.options
        let pinSet = info.clientPIN == true
        if options["uv"] == true {
            if info.hasBuiltInUserVerification { return .asIs }
            if pinSet { return .pinToken }
            return .impossible(info.clientPIN == false ? .pinNotSet : .userVerificationUnavailable)
        }
        guard pinSet, !info.hasBuiltInUserVerification else { return .asIs }
        if info.alwaysRequiresUserVerification { return .pinToken }
        if request.command == .makeCredential,
            options["rk"] == true || !info.makesCredentialsWithoutUserVerification
        {
            return .pinToken
        }
        return .asIs
    }

    /// After the key answered CTAP2_ERR_PUAT_REQUIRED to a request sent without a token (`info` read afresh, since
    /// a PIN may have been set meanwhile): the PIN when one is set, else built-in verification when the key has it.
    /// `nil`: the answer stands.
    static func afterTokenRequired(_ request: VerifiableRequest?, info: AuthenticatorInfo) -> Retry? {
        guard let request, !request.hasPinUvAuthParam else { return nil }
        if info.clientPIN == true { return .pinToken }
        if info.hasBuiltInUserVerification, request.options["uv"] != true { return .builtInUserVerification }
        return nil
    }

    /// How to send a request again after CTAP2_ERR_PUAT_REQUIRED.
    enum Retry: Equatable, Sendable {
        case pinToken
        case builtInUserVerification
    }
}
