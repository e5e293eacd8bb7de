/// An advertising data type (Bluetooth Assigned Numbers, "Common Data Types"). Unknown values survive as data.
public struct ADType: RawRepresentable, Hashable, Sendable {
    /// The value as the wire carries it.
    public var rawValue: UInt8
    /// Wraps any value, known or not.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Flags: discoverability and BR/EDR support. Only connectable advertising needs them.
    public static let flags = ADType(rawValue: 0x01)
    /// Incomplete list of 16-bit service UUIDs.
    public static let incompleteServiceUUIDs16 = ADType(rawValue: 0x02)
    /// Complete list of 16-bit service UUIDs.
    public static let completeServiceUUIDs16 = ADType(rawValue: 0x03)
    /// Complete local name.
    public static let completeLocalName = ADType(rawValue: 0x09)
    /// Service data with a 16-bit UUID: the UUID (little-endian) followed by the data.
    public static let serviceData16 = ADType(rawValue: 0x16)
    /// Manufacturer-specific data.
    public static let manufacturerData = ADType(rawValue: 0xFF)
}

/// A 16-bit Bluetooth service UUID, short for `0000xxxx-0000-1000-8000-00805f9b34fb`.
public struct ServiceUUID16: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The value as the wire carries it.
    public var rawValue: UInt16
    /// Wraps any value, known or not.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// FIDO's caBLE UUID (an SDO service), used by newer Chromium and Google Play services.
    public static let fidoCable = ServiceUUID16(rawValue: 0xFFF9)
    /// Google's caBLE UUID (a member service), used by iOS 16, older Chromium and Chromium's own Android
    /// authenticator (`BLEAdvert.java`).
    public static let googleCable = ServiceUUID16(rawValue: 0xFDE2)

    /// The 128-bit form, lower case, as BlueZ's D-Bus API and most platform APIs spell it:
    /// `0000fff9-0000-1000-8000-00805f9b34fb`.
    public var uuidString: String {
        let hex = String(rawValue, radix: 16)
        return "0000" + String(repeating: "0", count: 4 - hex.count) + hex + Self.baseSuffix
    }

    /// The 16-bit UUID a 128-bit one is short for (any case), or nil when it is not on the Bluetooth base UUID.
    public init?(uuidString: String) {
        let text = uuidString.lowercased()
        let digits = text.dropFirst(4).prefix(4)
        guard text.utf8.count == 36, text.hasPrefix("0000"), text.hasSuffix(Self.baseSuffix),
            digits.allSatisfy(\.isHexDigit), let value = UInt16(digits, radix: 16)
        else { return nil }
        self.init(rawValue: value)
    }

    private static let baseSuffix = "-0000-1000-8000-00805f9b34fb"

    /// The two bytes as advertising data carries them: little-endian.
    public var bytes: [UInt8] { [UInt8(truncatingIfNeeded: rawValue), UInt8(truncatingIfNeeded: rawValue >> 8)] }

    /// A one-line explanation for logs and error messages.
    public var description: String {
        let hex = String(rawValue, radix: 16)
        return "0x" + String(repeating: "0", count: 4 - hex.count) + hex.uppercased()
    }
}

/// One AD structure: `length ‖ type ‖ data`, where the length byte counts the type and the data.
public struct ADStructure: Hashable, Sendable {
    /// The most data one structure can hold: its length byte counts the type byte too.
    public static let maximumDataCount = 254

    /// What the data is.
    public let type: ADType
    /// The data after the type byte.
    public let data: [UInt8]

    /// Builds a structure; the data must fit its length byte (at most 254 bytes).
    public init(type: ADType, data: [UInt8]) throws(AdvertisingDataError) {
        guard data.count <= Self.maximumDataCount else { throw .dataTooLong(data.count) }
        self.type = type
        self.data = data
    }

    /// Service data under a 16-bit UUID (AD type 0x16).
    public init(serviceUUID: ServiceUUID16, serviceData: [UInt8]) throws(AdvertisingDataError) {
        try self.init(type: .serviceData16, data: serviceUUID.bytes + serviceData)
    }

    /// For the parser, which read at most 254 bytes.
    fileprivate init(validType type: ADType, data: [UInt8]) {
        self.type = type
        self.data = data
    }

    /// The UUID and data of a 16-bit service data structure; `nil` for any other type or when shorter than a UUID.
    public var serviceData: (uuid: ServiceUUID16, data: [UInt8])? {
        guard type == .serviceData16, data.count >= 2 else { return nil }
        return (ServiceUUID16(rawValue: UInt16(data[0]) | UInt16(data[1]) << 8), Array(data[2...]))
    }
}

/// Why advertising data was refused.
public enum AdvertisingDataError: Error, Hashable, Sendable {
    /// The AD structure starting at this offset runs past the end of the data.
    case truncated(offset: Int)
    /// One structure's data is longer than its length byte can count (254 bytes); the count given.
    case dataTooLong(Int)
    /// The structures need more than the 31 bytes of a legacy advertisement; the count given.
    case tooLongForLegacyAdvertising(Int)
}

extension AdvertisingDataError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .truncated(let offset): "AD structure at offset \(offset) runs past the end of the advertising data"
        case .dataTooLong(let count): "AD structure data of \(count) bytes does not fit a length byte"
        case .tooLongForLegacyAdvertising(let count): "advertising data of \(count) bytes exceeds 31 bytes"
        }
    }
}

/// The advertising data (AD) bytes a BLE controller broadcasts: a sequence of AD structures
/// (Core Specification Vol 3 Part C §11).
///
/// A caBLE v2 authenticator broadcasts its 20-byte encrypted advert as 16-bit service data. Chromium's Android
/// authenticator (`BLEAdvert.java`) advertises non-connectable, without device name or TX power, with the caBLE
/// UUID in the service UUID list and as service data. Android's stack adds the Flags structure only to
/// connectable advertising, so those adverts carry none, and neither does `caBLE(advert:)`.
public struct AdvertisingData: Hashable, Sendable {
    /// The most a legacy advertising PDU (or scan response) carries.
    public static let legacyMaximumCount = 31

    /// The structures in order.
    public var structures: [ADStructure]

    /// Wraps structures built elsewhere; `bytes` may then exceed 31 bytes (extended advertising).
    public init(structures: [ADStructure]) {
        self.structures = structures
    }

    /// The advertising data of a caBLE v2 authenticator: a complete 16-bit service UUID list naming `serviceUUID`,
    /// then `advert` as service data under it. No Flags: the advert is non-connectable. 28 bytes for a 20-byte
    /// advert.
    ///
    /// `serviceUUID` defaults to FIDO's 0xFFF9; Chromium's own Android code sends Google's 0xFDE2. Chromium and
    /// webauthn-rs scan for both.
    public static func caBLE(
        advert: [UInt8],
        serviceUUID: ServiceUUID16 = .fidoCable
    ) throws(AdvertisingDataError) -> AdvertisingData {
        let data = AdvertisingData(structures: [
            try ADStructure(type: .completeServiceUUIDs16, data: serviceUUID.bytes),
            try ADStructure(serviceUUID: serviceUUID, serviceData: advert),
        ])
        let count = data.bytes.count
        guard count <= legacyMaximumCount else { throw .tooLongForLegacyAdvertising(count) }
        return data
    }

    /// Walks the AD structures of `bytes`.
    ///
    /// A zero length byte ends the data early, as the Core Specification allows, so controllers' zero padding
    /// is not an error; what follows it is dropped. A length that runs past the end is `.truncated`. Structures
    /// of any type and length are kept; the input may be longer than 31 bytes (extended advertising, or
    /// advertising data joined with a scan response).
    public init(bytes: [UInt8]) throws(AdvertisingDataError) {
        var structures: [ADStructure] = []
        var offset = 0
        while offset < bytes.count {
            let length = Int(bytes[offset])
            if length == 0 { break }
            guard length <= bytes.count - offset - 1 else { throw .truncated(offset: offset) }
            let type = ADType(rawValue: bytes[offset + 1])
            structures.append(ADStructure(validType: type, data: Array(bytes[offset + 2..<offset + 1 + length])))
            offset += 1 + length
        }
        self.structures = structures
    }

    /// The bytes: each structure as `length ‖ type ‖ data`.
    public var bytes: [UInt8] {
        var output: [UInt8] = []
        for structure in structures {
            output.append(UInt8(structure.data.count + 1))
            output.append(structure.type.rawValue)
            output.append(contentsOf: structure.data)
        }
        return output
    }

    /// The data of the first 16-bit service data structure for `uuid`, if any.
    public func serviceData(for uuid: ServiceUUID16) -> [UInt8]? {
        for structure in structures {
            if let entry = structure.serviceData, entry.uuid == uuid { return entry.data }
        }
        return nil
    }

    /// The 20-byte caBLE v2 advert to trial-decrypt, as Chromium's `FidoCableDiscovery` picks it: the service data
    /// for Google's 0xFDE2 if there is any, otherwise for FIDO's 0xFFF9, and only when it is exactly 20 bytes.
    ///
    /// Longer service data, which CTAP 2.3 drafts extend with a CBOR suffix, is not an advert here, as in Chromium.
    /// Everything else (other types, other UUIDs, service data too short to hold a UUID) is skipped.
    public var caBLEAdvert: [UInt8]? {
        guard let data = serviceData(for: .googleCable) ?? serviceData(for: .fidoCable),
            data.count == EIDKey.advertByteCount
        else { return nil }
        return data
    }
}
