// Sizes and offsets of <linux/uhid.h> for Tests/UHIDTests, which pins the Swift codec to the kernel header.
#ifndef CUHIDHEADER_SHIM_H
#define CUHIDHEADER_SHIM_H

#include <stddef.h>

#ifdef __linux__
#include <linux/input.h>
#include <linux/uhid.h>

#define CUHID_OFFSET(member) ((long)offsetof(struct uhid_event, member))

static inline long cuhid_event_size(void) { return (long)sizeof(struct uhid_event); }
static inline long cuhid_union_offset(void) { return CUHID_OFFSET(u); }
static inline long cuhid_data_max(void) { return UHID_DATA_MAX; }
static inline long cuhid_descriptor_max(void) { return HID_MAX_DESCRIPTOR_SIZE; }
static inline long cuhid_bus_usb(void) { return BUS_USB; }

static inline long cuhid_type_destroy(void) { return UHID_DESTROY; }
static inline long cuhid_type_start(void) { return UHID_START; }
static inline long cuhid_type_stop(void) { return UHID_STOP; }
static inline long cuhid_type_open(void) { return UHID_OPEN; }
static inline long cuhid_type_close(void) { return UHID_CLOSE; }
static inline long cuhid_type_output(void) { return UHID_OUTPUT; }
static inline long cuhid_type_get_report(void) { return UHID_GET_REPORT; }
static inline long cuhid_type_get_report_reply(void) { return UHID_GET_REPORT_REPLY; }
static inline long cuhid_type_create2(void) { return UHID_CREATE2; }
static inline long cuhid_type_input2(void) { return UHID_INPUT2; }
static inline long cuhid_type_set_report(void) { return UHID_SET_REPORT; }
static inline long cuhid_type_set_report_reply(void) { return UHID_SET_REPORT_REPLY; }

static inline long cuhid_report_feature(void) { return UHID_FEATURE_REPORT; }
static inline long cuhid_report_output(void) { return UHID_OUTPUT_REPORT; }
static inline long cuhid_report_input(void) { return UHID_INPUT_REPORT; }

static inline long cuhid_create2_size(void) { return (long)sizeof(struct uhid_create2_req); }
static inline long cuhid_create2_name(void) { return CUHID_OFFSET(u.create2.name); }
static inline long cuhid_create2_phys(void) { return CUHID_OFFSET(u.create2.phys); }
static inline long cuhid_create2_uniq(void) { return CUHID_OFFSET(u.create2.uniq); }
static inline long cuhid_create2_rd_size(void) { return CUHID_OFFSET(u.create2.rd_size); }
static inline long cuhid_create2_bus(void) { return CUHID_OFFSET(u.create2.bus); }
static inline long cuhid_create2_vendor(void) { return CUHID_OFFSET(u.create2.vendor); }
static inline long cuhid_create2_product(void) { return CUHID_OFFSET(u.create2.product); }
static inline long cuhid_create2_version(void) { return CUHID_OFFSET(u.create2.version); }
static inline long cuhid_create2_country(void) { return CUHID_OFFSET(u.create2.country); }
static inline long cuhid_create2_rd_data(void) { return CUHID_OFFSET(u.create2.rd_data); }

static inline long cuhid_input2_size_of(void) { return (long)sizeof(struct uhid_input2_req); }
static inline long cuhid_input2_size(void) { return CUHID_OFFSET(u.input2.size); }
static inline long cuhid_input2_data(void) { return CUHID_OFFSET(u.input2.data); }

static inline long cuhid_output_size_of(void) { return (long)sizeof(struct uhid_output_req); }
static inline long cuhid_output_data(void) { return CUHID_OFFSET(u.output.data); }
static inline long cuhid_output_size(void) { return CUHID_OFFSET(u.output.size); }
static inline long cuhid_output_rtype(void) { return CUHID_OFFSET(u.output.rtype); }

static inline long cuhid_get_report_size_of(void) { return (long)sizeof(struct uhid_get_report_req); }
static inline long cuhid_get_report_id(void) { return CUHID_OFFSET(u.get_report.id); }
static inline long cuhid_get_report_rnum(void) { return CUHID_OFFSET(u.get_report.rnum); }
static inline long cuhid_get_report_rtype(void) { return CUHID_OFFSET(u.get_report.rtype); }

static inline long cuhid_get_report_reply_size_of(void) { return (long)sizeof(struct uhid_get_report_reply_req); }
static inline long cuhid_get_report_reply_id(void) { return CUHID_OFFSET(u.get_report_reply.id); }
static inline long cuhid_get_report_reply_err(void) { return CUHID_OFFSET(u.get_report_reply.err); }
static inline long cuhid_get_report_reply_size(void) { return CUHID_OFFSET(u.get_report_reply.size); }
static inline long cuhid_get_report_reply_data(void) { return CUHID_OFFSET(u.get_report_reply.data); }

static inline long cuhid_set_report_size_of(void) { return (long)sizeof(struct uhid_set_report_req); }
static inline long cuhid_set_report_id(void) { return CUHID_OFFSET(u.set_report.id); }
static inline long cuhid_set_report_rnum(void) { return CUHID_OFFSET(u.set_report.rnum); }
static inline long cuhid_set_report_rtype(void) { return CUHID_OFFSET(u.set_report.rtype); }
static inline long cuhid_set_report_size(void) { return CUHID_OFFSET(u.set_report.size); }
static inline long cuhid_set_report_data(void) { return CUHID_OFFSET(u.set_report.data); }

static inline long cuhid_set_report_reply_size_of(void) { return (long)sizeof(struct uhid_set_report_reply_req); }
static inline long cuhid_set_report_reply_id(void) { return CUHID_OFFSET(u.set_report_reply.id); }
static inline long cuhid_set_report_reply_err(void) { return CUHID_OFFSET(u.set_report_reply.err); }

static inline long cuhid_start_size_of(void) { return (long)sizeof(struct uhid_start_req); }
static inline long cuhid_start_dev_flags(void) { return CUHID_OFFSET(u.start.dev_flags); }

/// Whether this machine stores integers little-endian, as the Swift codec assumes.
static inline int cuhid_little_endian(void) {
    const unsigned int one = 1;
    return *(const unsigned char *)&one == 1;
}
#endif

#endif
