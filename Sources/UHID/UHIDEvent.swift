/// Why bytes are not a `struct uhid_event`, or an event cannot be encoded.
public enum UHIDCodecError: Error, Hashable, Sendable {
    /// Fewer bytes than the event type needs (the size given); reads from /dev/uhid are never this short.
    case truncated(Int)
    /// A `size` field larger than the data array (``UHIDLayout/dataMaximum``); the size given.
    case sizeOutOfRange(Int)
    /// A field's value does not fit its array (the field name, the length and the capacity).
    case fieldTooLong(String, length: Int, capacity: Int)
}

/// Report types of `enum uhid_report_type`.
public struct UHIDReportType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `UHID_FEATURE_REPORT`.
    public static let feature = UHIDReportType(rawValue: 0)
    /// `UHID_OUTPUT_REPORT`.
    public static let output = UHIDReportType(rawValue: 1)
    /// `UHID_INPUT_REPORT`.
    public static let input = UHIDReportType(rawValue: 2)
}

/// The payload of `UHID_CREATE2`: who the device says it is, and its report descriptor.
public struct UHIDCreate2: Hashable, Sendable {
    /// The device name (`HID_NAME`), at most 127 bytes of UTF-8 so a NUL ends it.
    public var name: String
    /// The physical location (`HID_PHYS`), at most 63 bytes.
    public var phys: String
    /// The unique identifier or serial number (`HID_UNIQ`), at most 63 bytes.
    public var uniq: String
    /// The bus (`BUS_USB` is 0x03).
    public var bus: UInt16
    public var vendor: UInt32
    public var product: UInt32
    public var version: UInt32
    public var country: UInt32
    /// The HID report descriptor, at most ``UHIDLayout/descriptorMaximum`` bytes.
    public var descriptor: [UInt8]

    /// Checks that every field fits its array in `struct uhid_create2_req`.
    public init(
        name: String, phys: String = "", uniq: String = "", bus: UInt16, vendor: UInt32, product: UInt32,
        version: UInt32 = 0, country: UInt32 = 0, descriptor: [UInt8]
    ) throws(UHIDCodecError) {
        for (field, value, capacity) in [("name", name, 128), ("phys", phys, 64), ("uniq", uniq, 64)]
        where value.utf8.count >= capacity {
            throw .fieldTooLong(field, length: value.utf8.count, capacity: capacity - 1)
        }
        guard descriptor.count <= UHIDLayout.descriptorMaximum else {
            throw .fieldTooLong("rd_data", length: descriptor.count, capacity: UHIDLayout.descriptorMaximum)
        }
        (self.name, self.phys, self.uniq) = (name, phys, uniq)
        (self.bus, self.vendor, self.product, self.version, self.country) = (bus, vendor, product, version, country)
        self.descriptor = descriptor
    }
}

/// One `struct uhid_event` of `<linux/uhid.h>`: what is written to and read from /dev/uhid.
///
/// The struct is packed: a `__u32 type`, then a union whose largest member is `uhid_create2_req` (4372 bytes),
/// padded to 4376 by the union's 8-byte alignment, so an event is ``UHIDLayout/eventSize`` (4380) bytes. Integers
/// are in the host's byte order; this codec writes and reads little-endian, the order of every Linux architecture
/// Swift runs on (x86_64, aarch64). ``bytes()`` is always the full 4380 bytes, zero-padded.
///
/// Events the kernel sends: ``start(flags:)``, ``stop``, ``open``, ``close``, ``output(data:type:)``,
/// ``getReport(id:reportNumber:type:)`` and ``setReport(id:reportNumber:type:data:)``. Events the device
/// sends: ``create2(_:)``, ``destroy``, ``input2(_:)``, ``getReportReply(id:error:data:)`` and
/// ``setReportReply(id:error:)``. Types this codec does not know (the legacy ones) decode to ``unknown(type:)``.
public enum UHIDEvent: Hashable, Sendable {
    case create2(UHIDCreate2)
    case destroy
    case start(flags: UInt64)
    case stop
    case open
    case close
    /// Data the host wrote (`UHID_OUTPUT`): for a hidraw write, the report number first, then the report.
    case output(data: [UInt8], type: UHIDReportType)
    /// A report for the host (`UHID_INPUT2`), at most ``UHIDLayout/dataMaximum`` bytes.
    case input2([UInt8])
    case getReport(id: UInt32, reportNumber: UInt8, type: UHIDReportType)
    /// The answer to ``getReport(id:reportNumber:type:)``; `error` is an errno value, 0 for success.
    case getReportReply(id: UInt32, error: UInt16, data: [UInt8])
    case setReport(id: UInt32, reportNumber: UInt8, type: UHIDReportType, data: [UInt8])
    /// The answer to ``setReport(id:reportNumber:type:data:)``; `error` is an errno value, 0 for success.
    case setReportReply(id: UInt32, error: UInt16)
    /// An event type this codec does not handle; callers ignore it.
    case unknown(type: UInt32)

    /// The `type` field (`enum uhid_event_type`).
    public var type: UInt32 {
        switch self {
        case .destroy: UHIDLayout.EventType.destroy
        case .start: UHIDLayout.EventType.start
        case .stop: UHIDLayout.EventType.stop
        case .open: UHIDLayout.EventType.open
        case .close: UHIDLayout.EventType.close
        case .output: UHIDLayout.EventType.output
        case .getReport: UHIDLayout.EventType.getReport
        case .getReportReply: UHIDLayout.EventType.getReportReply
        case .create2: UHIDLayout.EventType.create2
        case .input2: UHIDLayout.EventType.input2
        case .setReport: UHIDLayout.EventType.setReport
        case .setReportReply: UHIDLayout.EventType.setReportReply
        case .unknown(let type): type
        }
    }
}

extension UHIDEvent {
    /// Parses an event read from /dev/uhid.
    ///
    /// The bytes must reach at least to the end of the event type's union member (a read returns all 4380);
    /// extra bytes are ignored.
    /// - Throws: ``UHIDCodecError/truncated(_:)`` for too few bytes, ``UHIDCodecError/sizeOutOfRange(_:)``
    ///   for a `size` field above 4096.
    public init(bytes: [UInt8]) throws(UHIDCodecError) {
        let reader = Reader(bytes: bytes)
        guard bytes.count >= UHIDLayout.typeSize else { throw .truncated(bytes.count) }
        let type = reader.u32(0)
        typealias T = UHIDLayout.EventType
        let needed: Int
        switch type {
        case T.destroy, T.stop, T.open, T.close: needed = 0
        case T.start: needed = 8
        case T.output: needed = UHIDLayout.Output.size
        case T.getReport: needed = UHIDLayout.GetReport.size
        case T.getReportReply: needed = UHIDLayout.GetReportReply.size
        case T.create2: needed = UHIDLayout.Create2.size
        case T.input2: needed = UHIDLayout.Input2.size
        case T.setReport: needed = UHIDLayout.SetReport.size
        case T.setReportReply: needed = UHIDLayout.SetReportReply.size
        default:
            self = .unknown(type: type)
            return
        }
        guard bytes.count >= UHIDLayout.typeSize + needed else { throw .truncated(bytes.count) }

        func data(sizeAt sizeOffset: Int, dataAt dataOffset: Int) throws(UHIDCodecError) -> [UInt8] {
            let size = Int(reader.u16(sizeOffset))
            guard size <= UHIDLayout.dataMaximum else { throw .sizeOutOfRange(size) }
            return reader.slice(dataOffset, size)
        }
        switch type {
        case T.destroy: self = .destroy
        case T.stop: self = .stop
        case T.open: self = .open
        case T.close: self = .close
        case T.start: self = .start(flags: reader.u64(4))
        case T.output:
            let data = try data(sizeAt: UHIDLayout.Output.sizeOffset, dataAt: UHIDLayout.Output.dataOffset)
            self = .output(data: data, type: UHIDReportType(rawValue: bytes[UHIDLayout.Output.rtypeOffset]))
        case T.getReport:
            self = .getReport(
                id: reader.u32(UHIDLayout.GetReport.idOffset), reportNumber: bytes[UHIDLayout.GetReport.rnumOffset],
                type: UHIDReportType(rawValue: bytes[UHIDLayout.GetReport.rtypeOffset]))
        case T.getReportReply:
            let data = try data(
                sizeAt: UHIDLayout.GetReportReply.sizeOffset, dataAt: UHIDLayout.GetReportReply.dataOffset)
            self = .getReportReply(
                id: reader.u32(UHIDLayout.GetReportReply.idOffset),
                error: reader.u16(UHIDLayout.GetReportReply.errOffset), data: data)
        case T.create2:
            typealias C = UHIDLayout.Create2
            let descriptorSize = Int(reader.u16(C.rdSizeOffset))
            guard descriptorSize <= UHIDLayout.descriptorMaximum else { throw .sizeOutOfRange(descriptorSize) }
            self = .create2(
                try UHIDCreate2(
                    name: reader.string(C.nameOffset, 128), phys: reader.string(C.physOffset, 64),
                    uniq: reader.string(C.uniqOffset, 64), bus: reader.u16(C.busOffset),
                    vendor: reader.u32(C.vendorOffset), product: reader.u32(C.productOffset),
                    version: reader.u32(C.versionOffset), country: reader.u32(C.countryOffset),
                    descriptor: reader.slice(C.rdDataOffset, descriptorSize)))
        case T.input2:
            self = .input2(try data(sizeAt: UHIDLayout.Input2.sizeOffset, dataAt: UHIDLayout.Input2.dataOffset))
        case T.setReport:
            let data = try data(sizeAt: UHIDLayout.SetReport.sizeOffset, dataAt: UHIDLayout.SetReport.dataOffset)
            self = .setReport(
                id: reader.u32(UHIDLayout.SetReport.idOffset), reportNumber: bytes[UHIDLayout.SetReport.rnumOffset],
                type: UHIDReportType(rawValue: bytes[UHIDLayout.SetReport.rtypeOffset]), data: data)
        default:  // T.setReportReply
            self = .setReportReply(
                id: reader.u32(UHIDLayout.SetReportReply.idOffset),
                error: reader.u16(UHIDLayout.SetReportReply.errOffset))
        }
    }

    /// The event as the 4380 bytes of a `struct uhid_event`, zero-padded.
    /// - Throws: ``UHIDCodecError/fieldTooLong(_:length:capacity:)`` if report data exceeds 4096 bytes.
    public func bytes() throws(UHIDCodecError) -> [UInt8] {
        var writer = Writer()
        writer.u32(0, type)
        func data(_ data: [UInt8], sizeAt sizeOffset: Int, dataAt dataOffset: Int) throws(UHIDCodecError) {
            guard data.count <= UHIDLayout.dataMaximum else {
                throw .fieldTooLong("data", length: data.count, capacity: UHIDLayout.dataMaximum)
            }
            writer.u16(sizeOffset, UInt16(data.count))
            writer.bytes(dataOffset, data)
        }
        switch self {
        case .destroy, .stop, .open, .close, .unknown: break
        case .start(let flags): writer.u64(4, flags)
        case .output(let payload, let type):
            try data(payload, sizeAt: UHIDLayout.Output.sizeOffset, dataAt: UHIDLayout.Output.dataOffset)
            writer.bytes(UHIDLayout.Output.rtypeOffset, [type.rawValue])
        case .getReport(let id, let number, let type):
            writer.u32(UHIDLayout.GetReport.idOffset, id)
            writer.bytes(UHIDLayout.GetReport.rnumOffset, [number, type.rawValue])
        case .getReportReply(let id, let error, let payload):
            writer.u32(UHIDLayout.GetReportReply.idOffset, id)
            writer.u16(UHIDLayout.GetReportReply.errOffset, error)
            try data(
                payload, sizeAt: UHIDLayout.GetReportReply.sizeOffset, dataAt: UHIDLayout.GetReportReply.dataOffset)
        case .create2(let create):
            typealias C = UHIDLayout.Create2
            writer.bytes(C.nameOffset, Array(create.name.utf8))
            writer.bytes(C.physOffset, Array(create.phys.utf8))
            writer.bytes(C.uniqOffset, Array(create.uniq.utf8))
            writer.u16(C.rdSizeOffset, UInt16(create.descriptor.count))
            writer.u16(C.busOffset, create.bus)
            writer.u32(C.vendorOffset, create.vendor)
            writer.u32(C.productOffset, create.product)
            writer.u32(C.versionOffset, create.version)
            writer.u32(C.countryOffset, create.country)
            writer.bytes(C.rdDataOffset, create.descriptor)
        case .input2(let payload):
            try data(payload, sizeAt: UHIDLayout.Input2.sizeOffset, dataAt: UHIDLayout.Input2.dataOffset)
        case .setReport(let id, let number, let type, let payload):
            writer.u32(UHIDLayout.SetReport.idOffset, id)
            writer.bytes(UHIDLayout.SetReport.rnumOffset, [number, type.rawValue])
            try data(payload, sizeAt: UHIDLayout.SetReport.sizeOffset, dataAt: UHIDLayout.SetReport.dataOffset)
        case .setReportReply(let id, let error):
            writer.u32(UHIDLayout.SetReportReply.idOffset, id)
            writer.u16(UHIDLayout.SetReportReply.errOffset, error)
        }
        return writer.buffer
    }
}

/// Little-endian field access by absolute offset in the event.
private struct Reader {
    let bytes: [UInt8]

    func u16(_ offset: Int) -> UInt16 { UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8 }
    func u32(_ offset: Int) -> UInt32 { UInt32(u16(offset)) | UInt32(u16(offset + 2)) << 16 }
    func u64(_ offset: Int) -> UInt64 { UInt64(u32(offset)) | UInt64(u32(offset + 4)) << 32 }
    func slice(_ offset: Int, _ count: Int) -> [UInt8] { Array(bytes[offset..<(offset + count)]) }
    /// A NUL-terminated string in a fixed array; without a NUL, the whole array.
    func string(_ offset: Int, _ capacity: Int) -> String {
        let field = bytes[offset..<(offset + capacity)]
        return String(decoding: field.prefix { $0 != 0 }, as: UTF8.self)
    }
}

private struct Writer {
    var buffer = [UInt8](repeating: 0, count: UHIDLayout.eventSize)

    mutating func bytes(_ offset: Int, _ value: [UInt8]) {
        buffer.replaceSubrange(offset..<(offset + value.count), with: value)
    }
    mutating func u16(_ offset: Int, _ value: UInt16) { bytes(offset, [UInt8(value & 0xFF), UInt8(value >> 8)]) }
    mutating func u32(_ offset: Int, _ value: UInt32) {
        u16(offset, UInt16(value & 0xFFFF))
        u16(offset + 2, UInt16(value >> 16))
    }
    mutating func u64(_ offset: Int, _ value: UInt64) {
        u32(offset, UInt32(value & 0xFFFF_FFFF))
        u32(offset + 4, UInt32(value >> 32))
    }
}
