async function main(params) {
  const total = params.nights * 215;
  console.log("quoting", params.nights);
  return { message: `Total $${total}`, rawData: { total } };
}
