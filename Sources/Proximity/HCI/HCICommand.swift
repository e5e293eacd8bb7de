import Basics

/// The HCI commands the BlueZ backend sends, encoded as H4 packets for a raw HCI socket (Bluetooth Core 5.4,
/// Vol 4 Part E §5.4.1 and §7.8; the layouts match BlueZ's `lib/hci.h` `le_set_*_cp` structs). Pure: bytes in,
/// bytes out; `HCISocket.swift` does the I/O.
///
/// A command packet is `0x01 ‖ opcode (UInt16 LE) ‖ parameter length ‖ parameters`, where the opcode is
/// `OGF << 10 | OCF` and every LE controller command has OGF 0x08.
package struct HCICommand: Hashable, Sendable, CustomStringConvertible {
    /// `OGF << 10 | OCF`.
    package let opcode: UInt16
    /// The parameters, already in wire order.
    package let parameters: [UInt8]

    /// The H4 packet indicator of a command.
    package static let packetType: UInt8 = 0x01
    /// The OGF of the LE controller commands.
    package static let leControllerGroup: UInt16 = 0x08

    /// The opcode of an LE controller command with this OCF.
    package static func leOpcode(_ ocf: UInt16) -> UInt16 { leControllerGroup << 10 | ocf }

    /// LE Set Random Address (0x2005).
    package static let setRandomAddressOpcode = leOpcode(0x0005)
    /// LE Set Advertising Parameters (0x2006).
    package static let setAdvertisingParametersOpcode = leOpcode(0x0006)
    /// LE Set Advertising Data (0x2008).
    package static let setAdvertisingDataOpcode = leOpcode(0x0008)
    /// LE Set Advertising Enable (0x200A).
    package static let setAdvertisingEnableOpcode = leOpcode(0x000A)
    /// LE Set Scan Parameters (0x200B).
    package static let setScanParametersOpcode = leOpcode(0x000B)
    /// LE Set Scan Enable (0x200C).
    package static let setScanEnableOpcode = leOpcode(0x000C)

    /// The whole packet as written to the socket.
    package var packet: [UInt8] {
        [Self.packetType, UInt8(truncatingIfNeeded: opcode), UInt8(truncatingIfNeeded: opcode >> 8)]
            + [UInt8(parameters.count)] + parameters
    }

    /// The command's name in the Core specification, for error messages.
    package var description: String { Self.name(of: opcode) }

    /// The Core specification's name for an opcode this backend sends, or its hex value.
    package static func name(of opcode: UInt16) -> String {
        switch opcode {
        case setRandomAddressOpcode: "LE Set Random Address"
        case setAdvertisingParametersOpcode: "LE Set Advertising Parameters"
        case setAdvertisingDataOpcode: "LE Set Advertising Data"
        case setAdvertisingEnableOpcode: "LE Set Advertising Enable"
        case setScanParametersOpcode: "LE Set Scan Parameters"
        case setScanEnableOpcode: "LE Set Scan Enable"
        default: "HCI command 0x" + opcode.hexDigits(4, uppercase: true)
        }
    }

    /// LE Set Random Address: the address the controller advertises from when the advertising parameters name
    /// `HCIOwnAddressType.random`, least significant byte first. The controller refuses it ("command disallowed")
    /// while it advertises or scans.
    package static func setRandomAddress(_ address: StaticRandomAddress) -> HCICommand {
        HCICommand(opcode: setRandomAddressOpcode, parameters: address.littleEndianBytes)
    }

    /// LE Set Advertising Parameters for non-connectable undirected advertising (ADV_NONCONN_IND) on all three
    /// primary channels, with no filter policy:
    /// `min ‖ max (UInt16 LE, units of 0.625 ms) ‖ type 0x03 ‖ own address type ‖ peer address type 0x00 ‖
    /// peer address (6 zero bytes) ‖ channel map 0x07 ‖ filter policy 0x00`.
    package static func setAdvertisingParameters(
        interval: UInt16, ownAddressType: HCIOwnAddressType = .public
    ) -> HCICommand {
        HCICommand(
            opcode: setAdvertisingParametersOpcode,
            parameters: littleEndian(interval) + littleEndian(interval)
                + [0x03, ownAddressType.rawValue, 0x00, 0, 0, 0, 0, 0, 0, 0x07, 0x00])
    }

    /// LE Set Advertising Data: the significant length, then the data zero-padded to 31 bytes. The caller checks
    /// that `data` has at most 31 bytes.
    package static func setAdvertisingData(_ data: [UInt8]) -> HCICommand {
        precondition(data.count <= maximumAdvertisingDataCount, "advertising data longer than 31 bytes")
        return HCICommand(
            opcode: setAdvertisingDataOpcode,
            parameters: [UInt8(data.count)] + data
                + [UInt8](repeating: 0, count: maximumAdvertisingDataCount - data.count))
    }

    /// LE Set Advertising Enable.
    package static func setAdvertisingEnable(_ enable: Bool) -> HCICommand {
        HCICommand(opcode: setAdvertisingEnableOpcode, parameters: [enable ? 0x01 : 0x00])
    }

    /// LE Set Scan Parameters for a passive scan from the public address, accepting every advertiser:
    /// `type 0x00 ‖ interval ‖ window (UInt16 LE, units of 0.625 ms) ‖ own address type 0x00 ‖ filter policy 0x00`.
    package static func setScanParameters(interval: UInt16, window: UInt16) -> HCICommand {
        HCICommand(
            opcode: setScanParametersOpcode,
            parameters: [0x00] + littleEndian(interval) + littleEndian(window) + [0x00, 0x00])
    }

    /// LE Set Scan Enable with duplicate filtering off, so that every advertisement is reported.
    package static func setScanEnable(_ enable: Bool) -> HCICommand {
        HCICommand(opcode: setScanEnableOpcode, parameters: [enable ? 0x01 : 0x00, 0x00])
    }

    /// The most advertising data a legacy advertising PDU carries.
    package static let maximumAdvertisingDataCount = 31

    private static func littleEndian(_ value: UInt16) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
    }

    /// What `packet`, read while this command waits, says about it: its status if the packet is this command's
    /// Command Complete or Command Status, and `.unrelated` for anything else, including bytes that do not parse.
    package func answer(in packet: [UInt8]) -> HCICommandAnswer {
        switch try? HCIEvent(packet: packet) {
        case .commandComplete(opcode, let returnParameters)?:
            returnParameters.first.map { .status(HCIStatus(rawValue: $0)) } ?? .noStatus
        case .commandStatus(opcode, let status)?:
            .status(status)
        default:
            .unrelated
        }
    }
}

/// What one packet says about a command waiting for its answer.
package enum HCICommandAnswer: Hashable, Sendable {
    /// Not this command's Command Complete or Command Status: keep waiting.
    case unrelated
    /// The controller's answer.
    case status(HCIStatus)
    /// This command's Command Complete, without the status every command this backend sends returns.
    case noStatus
}

/// Which address an advertiser sends from (the Own_Address_Type parameter).
package enum HCIOwnAddressType: UInt8, Hashable, Sendable {
    /// The controller's public device address: fixed for the controller's life.
    case `public` = 0x00
    /// The random device address set with LE Set Random Address.
    case random = 0x01
}

/// An HCI status code (Core 5.4, Vol 1 Part F). Unknown values survive as data.
package struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value as the wire carries it.
    package var rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    package static let success = HCIStatus(rawValue: 0x00)
    package static let unknownCommand = HCIStatus(rawValue: 0x01)
    package static let hardwareFailure = HCIStatus(rawValue: 0x03)
    package static let memoryCapacityExceeded = HCIStatus(rawValue: 0x07)
    package static let commandDisallowed = HCIStatus(rawValue: 0x0C)
    package static let unsupportedFeature = HCIStatus(rawValue: 0x11)
    package static let invalidParameters = HCIStatus(rawValue: 0x12)
    package static let unspecifiedError = HCIStatus(rawValue: 0x1F)
    package static let controllerBusy = HCIStatus(rawValue: 0x3A)

    /// `status 0x12: invalid parameters`.
    package var description: String {
        let name: String? =
            switch self {
            case .success: "success"
            case .unknownCommand: "unknown HCI command"
            case .hardwareFailure: "hardware failure"
            case .memoryCapacityExceeded: "memory capacity exceeded"
            case .commandDisallowed: "command disallowed"
            case .unsupportedFeature: "unsupported feature or parameter value"
            case .invalidParameters: "invalid parameters"
            case .unspecifiedError: "unspecified error"
            case .controllerBusy: "controller busy"
            default: nil
            }
        return "status 0x" + rawValue.hexDigits(2, uppercase: true) + (name.map { ": " + $0 } ?? "")
    }
}
