/// Sizes and offsets of `struct uhid_event` (`<linux/uhid.h>`), counted from the start of the event.
///
/// `Tests/UHIDTests` checks every value against the kernel header with `sizeof` and `offsetof`.
public enum UHIDLayout {
    /// `sizeof(struct uhid_event)`: the 4-byte type, then the union. Its largest member, `uhid_create2_req`, is 4372
    /// bytes, but `uhid_start_req` (an unpacked `__u64`) gives the union 8-byte alignment, so the union is padded to
    /// 4376 bytes; the packed event puts it at offset 4 and ends at 4380.
    public static let eventSize = 4380
    /// The `__u32 type` field, at offset 0; the union follows it.
    public static let typeSize = 4
    /// `UHID_DATA_MAX`: the capacity of every report data array.
    public static let dataMaximum = 4096
    /// `HID_MAX_DESCRIPTOR_SIZE`: the capacity of `rd_data`.
    public static let descriptorMaximum = 4096

    /// Values of `enum uhid_event_type`.
    public enum EventType {
        public static let destroy: UInt32 = 1
        public static let start: UInt32 = 2
        public static let stop: UInt32 = 3
        public static let open: UInt32 = 4
        public static let close: UInt32 = 5
        public static let output: UInt32 = 6
        public static let getReport: UInt32 = 9
        public static let getReportReply: UInt32 = 10
        public static let create2: UInt32 = 11
        public static let input2: UInt32 = 12
        public static let setReport: UInt32 = 13
        public static let setReportReply: UInt32 = 14
    }

    /// `struct uhid_create2_req`.
    public enum Create2 {
        public static let nameOffset = 4
        public static let physOffset = 132
        public static let uniqOffset = 196
        public static let rdSizeOffset = 260
        public static let busOffset = 262
        public static let vendorOffset = 264
        public static let productOffset = 268
        public static let versionOffset = 272
        public static let countryOffset = 276
        public static let rdDataOffset = 280
        /// `sizeof(struct uhid_create2_req)`.
        public static let size = 4372
    }

    /// `struct uhid_input2_req`.
    public enum Input2 {
        public static let sizeOffset = 4
        public static let dataOffset = 6
        public static let size = 4098
    }

    /// `struct uhid_output_req`.
    public enum Output {
        public static let dataOffset = 4
        public static let sizeOffset = 4100
        public static let rtypeOffset = 4102
        public static let size = 4099
    }

    /// `struct uhid_get_report_req`.
    public enum GetReport {
        public static let idOffset = 4
        public static let rnumOffset = 8
        public static let rtypeOffset = 9
        public static let size = 6
    }

    /// `struct uhid_get_report_reply_req`.
    public enum GetReportReply {
        public static let idOffset = 4
        public static let errOffset = 8
        public static let sizeOffset = 10
        public static let dataOffset = 12
        public static let size = 4104
    }

    /// `struct uhid_set_report_req`.
    public enum SetReport {
        public static let idOffset = 4
        public static let rnumOffset = 8
        public static let rtypeOffset = 9
        public static let sizeOffset = 10
        public static let dataOffset = 12
        public static let size = 4104
    }

    /// `struct uhid_set_report_reply_req`.
    public enum SetReportReply {
        public static let idOffset = 4
        public static let errOffset = 8
        public static let size = 6
    }

    /// `struct uhid_start_req`: `__u64 dev_flags`.
    public enum Start {
        public static let devFlagsOffset = 4
        public static let size = 8
    }
}
