import Basics
import CBOR

extension CTAPCommand {
    /// The command's name in CTAP 2.1, or its byte in hex for commands this authenticator does not know.
    public var name: String {
        switch self {
        case .makeCredential: "makeCredential"
        case .getAssertion: "getAssertion"
        case .getInfo: "getInfo"
        case .clientPIN: "clientPIN"
        case .reset: "reset"
        case .getNextAssertion: "getNextAssertion"
        case .credentialManagement: "credentialManagement"
        case .credentialManagementPreview: "credentialManagement (preview 0x41)"
        case .selection: "selection"
        case .largeBlobs: "largeBlobs"
        case .config: "config"
        default: "command 0x\([rawValue].hexString)"
        }
    }
}

/// The shape of a request, for an operator's log: the command, its subcommand, the option keys and values, the
/// permissions a token is asked for, and whether a pinUvAuthParam is present.
///
/// Nothing else from the payload is kept: no client data hash, RP ID, user, credential ID, key, PIN block or
/// pinUvAuthParam value. Bytes that do not decode give a summary with the command only.
public struct CTAPRequestSummary: Hashable, Sendable, CustomStringConvertible {
    public var command: CTAPCommand
    /// The subcommand of clientPIN, credentialManagement and config.
    public var subcommand: Int?
    /// makeCredential's and getAssertion's options map.
    public var options: [String: Bool] = [:]
    /// The permissions a clientPIN token request asks for.
    public var permissions: Int?
    public var hasPinUvAuthParam = false
    /// Bytes follow the command but are not one CBOR map: nothing more is known.
    public var malformed = false

    public init(message: [UInt8]) {
        command = CTAPCommand(rawValue: message.first ?? 0)
        guard message.count > 1 else { return }
        guard let map = (try? CBORDecoder(requiresCanonicalForm: false).decode(message.dropFirst()))?.mapValue else {
            malformed = true
            return
        }
        let optionsKey: CBORValue?
        let pinUvAuthParamKey: CBORValue?
        switch command {
        case .makeCredential: (optionsKey, pinUvAuthParamKey) = (7, 8)
        case .getAssertion: (optionsKey, pinUvAuthParamKey) = (5, 6)
        case .clientPIN:
            (optionsKey, pinUvAuthParamKey) = (nil, 4)
            subcommand = map[2]?.intValue
            permissions = map[9]?.intValue
        case .credentialManagement, .credentialManagementPreview, .config:
            (optionsKey, pinUvAuthParamKey) = (nil, 4)
            subcommand = map[1]?.intValue
        case .largeBlobs: (optionsKey, pinUvAuthParamKey) = (nil, 5)
        default: (optionsKey, pinUvAuthParamKey) = (nil, nil)
        }
        if let optionsKey, let entries = map[optionsKey]?.mapValue {
            for case (.text(let key), .bool(let value)) in entries { options[key] = value }
        }
        if let pinUvAuthParamKey { hasPinUvAuthParam = map[pinUvAuthParamKey] != nil }
    }

    /// For example `makeCredential options {rk: true} pinUvAuthParam: absent`, or
    /// `clientPIN getPinUvAuthTokenUsingUvWithPermissions permissions 0x02`.
    public var description: String {
        var parts = [command.name]
        if malformed { return command.name + " (parameters are not a CBOR map)" }
        if let subcommand { parts.append(Self.subcommandName(subcommand, of: command)) }
        if let permissions { parts.append("permissions 0x\([UInt8(truncatingIfNeeded: permissions)].hexString)") }
        if command == .makeCredential || command == .getAssertion {
            let options = self.options.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            parts.append("options {\(options.joined(separator: ", "))}")
        }
        if command == .makeCredential || command == .getAssertion || hasPinUvAuthParam {
            parts.append("pinUvAuthParam: \(hasPinUvAuthParam ? "present" : "absent")")
        }
        return parts.joined(separator: " ")
    }

    private static func subcommandName(_ subcommand: Int, of command: CTAPCommand) -> String {
        let known: (any RawRepresentable)? =
            switch command {
            case .clientPIN: ClientPINRequest.Subcommand(rawValue: subcommand)
            case .credentialManagement, .credentialManagementPreview:
                Authenticator.CredentialManagementSubcommand(rawValue: subcommand)
            case .config: Authenticator.ConfigSubcommand(rawValue: subcommand)
            default: nil
            }
        return known.map { "\($0)" } ?? "subcommand \(subcommand)"
    }
}
